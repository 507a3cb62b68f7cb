//! libFuzzer target: the `--check` line reader and parser on any bytes never panic, and a line
//! that parses names what it says (it is the binary's own module, included as it is).
#![no_main]

#[path = "../../cli/src/checkline.rs"]
#[allow(dead_code)]
mod checkline;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    for zero in [false, true] {
        let mut lines = checkline::Lines::new(input, zero);
        while let Some(Ok(line)) = lines.next_line() {
            if let Ok(parsed) = checkline::parse_line(line) {
                // A parsed line has a name and says which file it names.
                assert!(!parsed.path.as_os_str().is_empty());
                assert!(!parsed.shown.is_empty());
            }
        }
    }
});
