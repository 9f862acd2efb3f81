//! Build script: the catalog the browser build embeds, without the `source` notes (kept in the repository and
//! in the native build, where the tests read them). The notes are a third of the catalog's bytes and the page
//! never shows them.

use std::{env, fs, path::Path};

const NOTES: &[&str] = &[
    "source",
    "params_reference_source",
    "usable_note",
    "config_source",
    "modeling_source",
];

fn main() {
    let out = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    for name in ["models.json", "gpus.json"] {
        let path = Path::new("src/catalog").join(name);
        println!("cargo:rerun-if-changed={}", path.display());
        let text = fs::read_to_string(&path).expect("catalog file");
        let mut value: serde_json::Value = serde_json::from_str(&text).expect("catalog JSON");
        if let Some(entries) = value.as_array_mut() {
            for entry in entries.iter_mut().filter_map(|e| e.as_object_mut()) {
                for key in NOTES {
                    entry.remove(*key);
                }
            }
        }
        let compact = serde_json::to_string(&value).expect("serializable");
        fs::write(Path::new(&out).join(name), compact).expect("write to OUT_DIR");
    }
}
