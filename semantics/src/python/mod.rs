//! Python's behaviour, in one place: `repr()` and `str()`, truthiness and Salt's
//! `is_true`, `fnmatch`, Salt's `yamlify_arg`, and the `str` methods and `pprint`
//! Salt's outputters rely on. The CLI, master, minion, job cache and returners all
//! use these; none keeps a copy. Each answer is pinned by cases recorded from
//! Python 3.11 and Salt 3007.8.

mod fnmatch;
mod pformat;
mod printable;
mod repr;
mod text;
mod truth;
mod yamlify;

pub use self::fnmatch::{Glob, GlobError, fnmatch};
pub use self::pformat::pformat;
pub use self::repr::{float_repr, number_repr, repr, repr_sls, str, str_repr, str_sls};
pub use self::text::{is_space, rstrip, splitlines};
pub use self::truth::{is_true, truthy};
pub use self::yamlify::yamlify;
