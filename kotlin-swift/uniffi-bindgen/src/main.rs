//! `uniffi-bindgen generate <lib> --language kotlin --out-dir <dir>`, from the uniffi the
//! library is built with.

fn main() {
    uniffi::uniffi_bindgen_main()
}
