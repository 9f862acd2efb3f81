//! Memory sizes. Everything internal is bytes as `f64`; display is GiB (2^30) unless a spec sheet says GB (10^9).

/// One gibibyte, 2^30 bytes: the unit vramfit shows memory in.
pub const GIB: f64 = 1_073_741_824.0;
/// One gigabyte, 10^9 bytes: the unit GPU spec sheets and some sources use.
pub const GB: f64 = 1_000_000_000.0;

/// Bytes → GiB.
pub fn to_gib(bytes: f64) -> f64 {
    bytes / GIB
}

/// GiB → bytes.
pub fn from_gib(gib: f64) -> f64 {
    gib * GIB
}

/// Formats bytes as GiB with a unit, e.g. `"12.3 GiB"`; two decimals below 10 GiB, one above.
pub fn fmt_gib(bytes: f64) -> String {
    let g = to_gib(bytes);
    if !g.is_finite() {
        return "∞ GiB".to_string();
    }
    if g.abs() < 10.0 {
        format!("{g:.2} GiB")
    } else {
        format!("{g:.1} GiB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gib_is_binary_and_gb_decimal() {
        assert_eq!(from_gib(1.0), 1_073_741_824.0);
        assert!((to_gib(80.0 * GB) - 74.505_805_969).abs() < 1e-6);
        assert_eq!(fmt_gib(1.5 * GIB), "1.50 GiB");
        assert_eq!(fmt_gib(24.0 * GIB), "24.0 GiB");
    }
}
