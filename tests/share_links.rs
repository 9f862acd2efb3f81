//! Links made by earlier builds keep decoding to the same setup: `tests/data/share-links-v1.jsonl` holds 40
//! links encoded by the build before the settings table (random forms over every setting, custom shapes
//! included), each with the form it stood for.
#![cfg(not(target_arch = "wasm32"))]

use vramfit::form::Form;
use vramfit::share;

#[test]
fn links_from_earlier_builds_decode_to_the_same_form() {
    let text = std::fs::read_to_string("tests/data/share-links-v1.jsonl").unwrap();
    let mut n = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let link = case["link"].as_str().unwrap();
        let form: Form = serde_json::from_value(case["form"].clone()).unwrap();
        let (decoded, ignored) = share::decode(link);
        assert!(ignored.is_empty(), "{link}: {ignored:?}");
        assert_eq!(decoded, form, "{link}");
        // And today's encoder writes the same link: links are stable, not only readable.
        assert_eq!(share::encode(&form), link);
        n += 1;
    }
    assert!(n >= 40);
}
