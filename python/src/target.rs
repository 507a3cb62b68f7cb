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
        if let Ok(s) = obj.cast::<PyString>() {
            let s = s.to_str()?;
            if s.trim().eq_ignore_ascii_case("all") {
                return Ok(Target::All);
            }
            return Target::from_names(s.split(','));
        }
        let Ok(list) = obj.extract::<Vec<String>>() else {
            return Err(PyTypeError::new_err(
                "device must be a str (\"auto\", \"cpu\", \"wgpu:0\", \"opencl:1\", \"all\") or a list of such names",
            ));
        };
        Target::from_names(list.iter().map(String::as_str))
    }

    /// The target of a list of device names, each parsed by the crate and named once.
    fn from_names<'a>(mut names: impl Iterator<Item = &'a str>) -> PyResult<Target> {
        let Some(first) = names.next() else {
            return Err(PyValueError::new_err("device: an empty list names no device"));
        };
        let first: Device = first.parse().py()?;
        let mut list = vec![first];
        for name in names {
            let device: Device = name.parse().py()?;
            if !list.contains(&device) {
                list.push(device);
            }
        }
        match list.as_slice() {
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
        // Auto's backend never fails to open; kept here, it costs a hasher no lock.
        static AUTO: OnceLock<Arc<dyn Backend>> = OnceLock::new();
        let devices = match self {
            Target::One(Device::Auto) => {
                if let Some(auto) = AUTO.get() {
                    return Ok(auto.clone());
                }
                let auto = b3accel::backend(Device::Auto)?;
                return Ok(AUTO.get_or_init(|| auto).clone());
            }
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
