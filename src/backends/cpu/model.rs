//! The CPU's model name, for the CPU backend's `DeviceInfo`: what the OS says (Linux's
//! `/proc/cpuinfo`, macOS's `sysctl`), else the CPU's own brand string (CPUID, on x86-64 under any
//! OS), else nothing (the caller then names the architecture).

/// The CPU's model name, where the OS or the CPU tells it: looked up once per process (on a
/// machine of many cores `/proc/cpuinfo` is large, and every `CpuBackend` names its CPU).
pub(super) fn cpu_model() -> Option<String> {
    static NAME: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    NAME.get_or_init(|| os_model().or_else(brand_string).map(|s| s.trim().to_string()).filter(|s| !s.is_empty()))
        .clone()
}

/// The `model name` line of `/proc/cpuinfo` (x86 and some other architectures have one).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn os_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.to_string())
}

/// `sysctl machdep.cpu.brand_string` ("Apple M2", "Intel(R) Core(TM) i7-...").
#[cfg(target_os = "macos")]
fn os_model() -> Option<String> {
    let name = c"machdep.cpu.brand_string";
    let mut len: libc::size_t = 0;
    // SAFETY: a size query (no output buffer) with a NUL-terminated name and a valid length.
    let asked = unsafe { libc::sysctlbyname(name.as_ptr(), std::ptr::null_mut(), &mut len, std::ptr::null_mut(), 0) };
    if asked != 0 || len == 0 {
        return None;
    }
    let mut buf = vec![0u8; len];
    // SAFETY: `buf` has room for the `len` bytes the call may write.
    let read = unsafe { libc::sysctlbyname(name.as_ptr(), buf.as_mut_ptr().cast(), &mut len, std::ptr::null_mut(), 0) };
    if read != 0 {
        return None;
    }
    buf.truncate(len);
    Some(String::from_utf8_lossy(&buf).trim_end_matches('\0').to_string())
}

/// No OS source elsewhere (Windows, the BSDs): the CPU's brand string, where it has one.
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos")))]
fn os_model() -> Option<String> {
    None
}

/// The processor brand string of CPUID leaves 0x8000_0002 to 0x8000_0004 (48 bytes, NUL-padded).
#[cfg(target_arch = "x86_64")]
fn brand_string() -> Option<String> {
    use std::arch::x86_64::{__cpuid, CpuidResult};
    // CPUID exists on every x86-64 CPU (`__cpuid` is a safe function from Rust 1.94 on).
    #[allow(unused_unsafe)]
    // SAFETY: CPUID is always available on x86-64 and has no side effects.
    let leaf = |n: u32| -> CpuidResult { unsafe { __cpuid(n) } };
    if leaf(0x8000_0000).eax < 0x8000_0004 {
        return None;
    }
    let mut bytes = Vec::with_capacity(48);
    for n in 0x8000_0002..=0x8000_0004u32 {
        let r = leaf(n);
        for word in [r.eax, r.ebx, r.ecx, r.edx] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
    }
    Some(String::from_utf8_lossy(&bytes).trim_end_matches('\0').to_string())
}

/// Other architectures have no brand string that user code can read.
#[cfg(not(target_arch = "x86_64"))]
fn brand_string() -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x86_64_cpus_are_named() {
        // Every x86-64 CPU made since 2003 has a brand string, so the name never falls back to
        // the architecture here, whatever the OS says.
        let brand = super::brand_string().expect("CPUID brand string");
        assert!(!brand.trim().is_empty());
        let name = super::cpu_model().expect("a model name");
        assert!(!name.is_empty() && name.trim() == name && !name.contains('\0'), "{name:?}");
    }
}
