//! Python's printf-style float conversions (`'%e' % x`, `'%g' % x`), which differ from
//! `repr(float)`: `'%g' % 1.0` is `1`, `'%g' % 1234567.0` is `1.23457e+06`.

/// `'%.{precision}e' % f` (`E` in upper case when `upper`): the exponent signed, at least
/// two digits.
pub fn format_e(f: f64, precision: usize, upper: bool) -> String {
    if let Some(special) = special(f, upper) {
        return special;
    }
    let s = format!("{f:.precision$e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let out = format!(
        "{mantissa}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.unsigned_abs()
    );
    if upper { out.to_uppercase() } else { out }
}

/// `'%.{precision}g' % f` (`'%#g'` when `alternate`, keeping trailing zeros; `G` when
/// `upper`): `precision` significant digits (0 counts as 1), fixed notation when the
/// exponent is from -4 to below the precision, else `d.ddde+XX`; trailing zeros dropped.
pub fn format_g(f: f64, precision: usize, upper: bool, alternate: bool) -> String {
    if let Some(special) = special(f, upper) {
        return special;
    }
    let p = precision.max(1);
    let sci = format_e(f, p - 1, false);
    let exp: i64 = sci
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    let p_i = i64::try_from(p).unwrap_or(i64::MAX);
    let body = if (-4..p_i).contains(&exp) {
        let decimals = usize::try_from(p_i - 1 - exp).unwrap_or(0);
        let fixed = format!("{f:.decimals$}");
        if alternate {
            if fixed.contains('.') {
                fixed
            } else {
                format!("{fixed}.")
            }
        } else {
            trim_zeros(&fixed).to_owned()
        }
    } else if alternate {
        sci
    } else {
        let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, ""));
        format!("{}e{exp}", trim_zeros(mantissa))
    };
    if upper { body.to_uppercase() } else { body }
}

/// `inf`, `-inf` or `nan` as `%e`/`%g` print them.
fn special(f: f64, upper: bool) -> Option<String> {
    let s = if f.is_nan() {
        "nan"
    } else if f == f64::INFINITY {
        "inf"
    } else if f == f64::NEG_INFINITY {
        "-inf"
    } else {
        return None;
    };
    Some(if upper {
        s.to_uppercase()
    } else {
        s.to_owned()
    })
}

/// Drops the zeros after the decimal point, and the point when nothing is left after it.
fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each expected text is what Python 3.11 printed for the same conversion.
    #[test]
    fn percent_g_matches_python() {
        let cases: &[(f64, usize, bool, bool, &str)] = &[
            (1e-05, 6, false, false, "1e-05"),
            (1.0, 6, false, false, "1"),
            (1234567.0, 6, false, false, "1.23457e+06"),
            (0.0001234, 3, false, false, "0.000123"),
            (1e-10, 6, true, false, "1E-10"),
            (100000.0, 6, false, false, "100000"),
            (1e6, 6, false, false, "1e+06"),
            (123.0, 0, false, false, "1e+02"),
            (1.0, 6, false, true, "1.00000"),
            (f64::INFINITY, 6, false, false, "inf"),
            (-0.0, 6, false, false, "-0"),
            (0.1, 10, false, false, "0.1"),
        ];
        for &(f, p, upper, alt, want) in cases {
            assert_eq!(format_g(f, p, upper, alt), want, "%{p}g of {f}");
        }
        assert_eq!(format_e(1e-05, 6, false), "1.000000e-05");
        assert_eq!(format_e(12345.678, 2, true), "1.23E+04");
    }
}
