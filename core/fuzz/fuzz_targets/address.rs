//! The address parser: no text panics it, and what parses prints as canonical text that parses
//! back to the same address and prints the same again.

#![no_main]

use libfuzzer_sys::fuzz_target;
use weida::address::{validate_path, Address};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = validate_path(text);
    if let Ok(a) = Address::parse(text) {
        let canonical = a.to_string();
        let again = Address::parse(&canonical).expect("canonical text parses");
        assert_eq!(again, a);
        assert_eq!(again.to_string(), canonical);
        assert_eq!(a.without_path().to_string(), a.authority_key());
        if let Some(path) = a.path() {
            assert!(validate_path(path).is_ok());
        }
    }
});
