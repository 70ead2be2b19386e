//! The unified diff Salt shows in a file state's `changes['diff']`: Python's
//! `"".join(difflib.unified_diff(a, b))` over lines that keep their endings, with empty file
//! names (`--- \n+++ \n`). The one implementation is exec's (`saltq_exec::unified_diff`),
//! shared with the `file.*` execution functions.

pub use saltq_exec::{unified_diff, unified_diff_lines};

/// Splits text into lines that keep their `\n` (Python's `readlines()` on a binary file).
pub fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}
