//! The execution modules, one file per Salt module. Each file exports `FUNCTIONS`, its part
//! of the function table; adding a module means adding its file and one line to [`MODULES`].

use crate::spec::Function;

/// Turns `async fn f(call: Call) -> Result<Value, ExecError>` into a table [`Handler`].
///
/// [`Handler`]: crate::spec::Handler
macro_rules! handler {
    ($f:path) => {
        |call: $crate::spec::Call| -> $crate::spec::BoxFuture { Box::pin($f(call)) }
    };
}

pub(crate) mod cmd;
pub(crate) mod grains;
pub(crate) mod pillar;
pub(crate) mod saltutil;
pub(crate) mod sys;
pub(crate) mod test;

/// Every module's functions.
pub(crate) const MODULES: &[&[Function]] = &[
    cmd::FUNCTIONS,
    grains::FUNCTIONS,
    pillar::FUNCTIONS,
    saltutil::FUNCTIONS,
    sys::FUNCTIONS,
    test::FUNCTIONS,
];
