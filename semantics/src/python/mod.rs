//! Python's behaviour, in one place: `repr()` and `str()` (floats included), `pprint`,
//! `json.dumps`, `'%g'`, `type(v).__name__`, `base64`, truthiness and Salt's `is_true`,
//! `fnmatch`, Salt's `yamlify_arg` (PyYAML's YAML 1.1 typing), and the `str` methods
//! Salt's outputters rely on. The CLI, master, minion, states, salt-api, job cache and
//! returners all use these; none keeps a copy (`semantics/tests/tidy.rs` checks). Each
//! answer is pinned by cases recorded from Python 3.11 and Salt 3007.8.

mod b64;
mod fnmatch;
mod json;
mod percent;
mod pformat;
pub mod posixpath;
mod printable;
mod repr;
mod text;
mod truth;
mod types;
mod yamlify;

pub use self::b64::{B64Error, b64decode, b64encode};
pub use self::fnmatch::{Glob, GlobError, fnmatch};
pub use self::json::{Dumps, dumps, salt_dumps};
pub use self::percent::{format_e, format_g};
pub use self::pformat::pformat;
pub use self::repr::{float_repr, number_repr, repr, repr_sls, str, str_repr, str_sls, yaml_float};
pub use self::text::{is_space, rstrip, splitlines};
pub use self::truth::{float_of, is_true, truthy};
pub use self::types::type_name;
pub use self::yamlify::{yaml11_scalar, yamlify};

/// Python's `re.match(pattern, text)`: a match anchored at the start of `text` only; the
/// error is the regex engine's message when `pattern` does not compile.
pub fn re_match(pattern: &str, text: &str) -> Result<bool, String> {
    crate::target::pyregex::PyRegex::new(pattern).map(|re| re.is_match(text))
}
