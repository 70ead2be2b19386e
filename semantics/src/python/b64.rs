//! Python's `base64` module as Salt uses it: encoding through the `base64` crate, and
//! `b64decode`'s forgiving (non-`validate`) reading, which no crate offers.

use base64::Engine as _;

/// Why Python's `base64.b64decode` raises `binascii.Error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum B64Error {
    /// The data characters stop one past a multiple of four.
    #[error(
        "Invalid base64-encoded string: number of data characters ({0}) cannot be 1 more than a multiple of 4"
    )]
    OneOver(usize),
    /// The last group of data characters is not closed by enough `=`.
    #[error("Incorrect padding")]
    Padding,
}

/// `base64.b64encode(data).decode()`: the standard alphabet, padded with `=`.
pub fn b64encode(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// `base64.b64decode(text)` (also `base64.decodebytes`, `binascii.a2b_base64`): characters
/// outside the alphabet are skipped, `=` that completes a group ends the data (what follows
/// is ignored), and a group left open is an error.
pub fn b64decode(text: &str) -> Result<Vec<u8>, B64Error> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc: u32 = 0;
    let mut quad = 0usize;
    let mut pads = 0usize;
    let mut data_chars = 0usize;
    for c in text.bytes() {
        if c == b'=' {
            pads += 1;
            if quad >= 2 && quad + pads >= 4 {
                return Ok(out);
            }
            continue;
        }
        let Some(v) = sextet(c) else { continue };
        pads = 0;
        data_chars += 1;
        acc = (acc << 6) | u32::from(v);
        quad += 1;
        // Each data character after the first of a group completes one more byte.
        if quad > 1 {
            let shift = 2 * (4 - quad);
            out.push(((acc >> shift) & 0xff) as u8);
            acc &= (1 << shift) - 1;
        }
        if quad == 4 {
            quad = 0;
            acc = 0;
        }
    }
    match quad {
        0 => Ok(out),
        1 => Err(B64Error::OneOver(data_chars)),
        _ => Err(B64Error::Padding),
    }
}

/// The value of one character of the standard alphabet.
fn sextet(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each answer is what Python 3.11's `base64.b64decode` gave for the same text.
    #[test]
    fn b64decode_matches_python() {
        let ok: &[(&str, &[u8])] = &[
            ("aGVsbG8=", b"hello"),
            ("aGV sbG8=", b"hello"),
            ("aGVsbG8=extra", b"hello"),
            ("aGVsbG8==", b"hello"),
            ("aG=VsbG8=", b"hello"),
            ("YQ==x", b"a"),
            ("!!YQ==", b"a"),
            ("Y=Q==", b"a"),
            ("", b""),
        ];
        for (text, want) in ok {
            assert_eq!(b64decode(text).as_deref(), Ok(*want), "{text:?}");
        }
        assert_eq!(b64decode("aGVsbG8"), Err(B64Error::Padding));
        assert_eq!(b64decode("YQ="), Err(B64Error::Padding));
        assert_eq!(b64decode("a"), Err(B64Error::OneOver(1)));
        assert_eq!(
            B64Error::OneOver(1).to_string(),
            "Invalid base64-encoded string: number of data characters (1) cannot be 1 more than a multiple of 4"
        );
        assert_eq!(b64encode(b"hello"), "aGVsbG8=");
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(b64decode(&b64encode(&all)).unwrap(), all);
    }
}
