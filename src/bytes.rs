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

/// Formats bytes as GiB with a unit, e.g. `"12.3 GiB"`; two decimals below 10 GiB, one above. An amount
/// too small to show in GiB (under 0.005 GiB, not zero) is shown in MiB, KiB or bytes, so that nothing real
/// reads "0.00 GiB".
pub fn fmt_gib(bytes: f64) -> String {
    let g = to_gib(bytes);
    if !g.is_finite() {
        return "∞ GiB".to_string();
    }
    let b = bytes.abs();
    if b > 0.0 && g.abs() < 0.005 {
        return if b >= 1024.0 * 1024.0 {
            format!("{:.2} MiB", bytes / (1024.0 * 1024.0))
        } else if b >= 1024.0 {
            format!("{:.0} KiB", bytes / 1024.0)
        } else {
            format!("{bytes:.0} B")
        };
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
        assert_eq!(fmt_gib(0.0), "0.00 GiB");
        // Too small for GiB: the PPO value head under LoRA, 4097 × 12 B = 49,164 B ≈ 48 KiB.
        assert_eq!(fmt_gib(49_164.0), "48 KiB");
        assert_eq!(fmt_gib(3.0 * 1024.0 * 1024.0), "3.00 MiB");
        assert_eq!(fmt_gib(-512.0), "-512 B");
        assert_eq!(fmt_gib(0.006 * GIB), "0.01 GiB");
    }
}
