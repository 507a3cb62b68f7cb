//! The `device=` argument: one device, a list of devices hashing together, or `"all"`; each name
//! parsed by the crate's `Device::from_str`, as the command line's `--backend` does.

use crate::errors::OrPy;
use b3accel::spread::Spread;
use b3accel::{Backend, Device};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// What `device=` names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// One device, or `auto`.
    One(Device),
    /// Several devices hashing each input together, each named once.
    List(Vec<Device>),
    /// Every hardware device (the CPU and each GPU that is not a software one).
    All,
}

impl Target {
    /// Reads `device=`: a name (`"auto"`, `"cpu"`, `"wgpu:0"`, `"opencl:1"`, `"all"`, or names
    /// joined by commas) or a list or tuple of names.
    pub fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Target> {
        let names: Vec<String> = if let Ok(s) = obj.cast::<PyString>() {
            let s = s.to_str()?;
            if s.trim().eq_ignore_ascii_case("all") {
                return Ok(Target::All);
            }
            s.split(',').map(str::to_owned).collect()
        } else if let Ok(list) = obj.extract::<Vec<String>>() {
            list
        } else {
            return Err(PyTypeError::new_err(
                "device must be a str (\"auto\", \"cpu\", \"wgpu:0\", \"opencl:1\", \"all\") or a list of such names",
            ));
        };
        let mut list = Vec::new();
        for name in &names {
            let device: Device = name.parse().py()?;
            if !list.contains(&device) {
                list.push(device);
            }
        }
        match list.as_slice() {
            [] => Err(PyValueError::new_err("device: an empty list names no device")),
            [one] => Ok(Target::One(*one)),
            _ if list.contains(&Device::Auto) => {
                Err(PyValueError::new_err("device: auto chooses one device for each input, so it cannot be in a list"))
            }
            _ => Ok(Target::List(list)),
        }
    }

    /// The backend that hashes for this target; a list is opened once per process and kept.
    pub fn open(&self) -> b3accel::Result<Arc<dyn Backend>> {
        static SPREADS: OnceLock<Mutex<HashMap<Target, Arc<Spread>>>> = OnceLock::new();
        let devices = match self {
            Target::One(device) => return b3accel::backend(*device),
            Target::List(list) => list.clone(),
            Target::All => b3accel::spread::hardware_devices(),
        };
        let mut spreads = SPREADS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        if let Some(spread) = spreads.get(self) {
            return Ok(spread.clone());
        }
        let spread = Arc::new(Spread::new(&devices)?);
        spreads.insert(self.clone(), spread.clone());
        Ok(spread)
    }
}
