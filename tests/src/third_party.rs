//! Where the end-to-end tests find third-party inputs (public formulas, Salt's own test trees):
//! `../shared/third-party` beside the checkout, never a copy inside the project.

use std::path::{Path, PathBuf};

/// `rel` under `../shared/third-party`, beside the workspace root that holds this crate.
/// Panics naming the path when it is missing: CI always has it.
pub fn third_party(rel: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace");
    third_party_under(root, rel).unwrap_or_else(|e| panic!("{e}"))
}

/// `rel` under `<workspace root>/../shared/third-party`, or why it cannot be had.
pub fn third_party_under(root: &Path, rel: &str) -> Result<PathBuf, String> {
    let path = root
        .parent()
        .unwrap_or(root)
        .join("shared/third-party")
        .join(rel);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "third-party test input {} is missing: the tests read it from ../shared/third-party \
             beside the checkout ({})",
            path.display(),
            root.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_formulas_are_found() {
        let ntp = third_party("formulas/ntp");
        assert!(ntp.join("ntp/ng/init.sls").is_file(), "{}", ntp.display());
    }

    #[test]
    fn a_missing_input_names_its_path() {
        let wrong = Path::new("/nonexistent-checkout/main");
        let err = third_party_under(wrong, "formulas/ntp").expect_err("no such folder");
        assert!(
            err.contains("/nonexistent-checkout/shared/third-party/formulas/ntp"),
            "{err}"
        );
    }
}
