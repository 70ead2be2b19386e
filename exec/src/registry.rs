//! The one function table: dispatch looks functions up here and `sys.*` lists and documents
//! them from here, so the two cannot disagree.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use crate::modules::MODULES;
use crate::spec::Function;

static TABLE: LazyLock<BTreeMap<&'static str, &'static Function>> = LazyLock::new(|| {
    let mut table = BTreeMap::new();
    for f in MODULES.iter().flat_map(|m| m.iter()) {
        let previous = table.insert(f.name, f);
        debug_assert!(previous.is_none(), "{} is registered twice", f.name);
    }
    table
});

/// The function registered under `name`, if any.
pub fn lookup(name: &str) -> Option<&'static Function> {
    TABLE.get(name).copied()
}

/// Every registered function, sorted by name.
pub fn functions() -> impl Iterator<Item = &'static Function> {
    TABLE.values().copied()
}

/// Every registered function's name (`test.ping`, ...), sorted.
pub fn function_names() -> Vec<&'static str> {
    TABLE.keys().copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_well_formed() {
        let count: usize = MODULES.iter().map(|m| m.len()).sum();
        assert_eq!(function_names().len(), count, "a name is registered twice");
        for f in functions() {
            let (module, fun) = f.name.split_once('.').unwrap_or_default();
            assert!(!module.is_empty() && !fun.is_empty(), "{}", f.name);
            assert!(!f.doc.is_empty(), "{} has no doc", f.name);
            // An alias's doc is its original's, after Salt's `alias_function` line.
            let example = match f
                .doc
                .strip_prefix("\nThis function is an alias of ``")
                .and_then(|rest| rest.split_once("``"))
            {
                Some((orig, _)) => format!("salt '*' {module}.{orig}"),
                None => format!("salt '*' {}", f.name),
            };
            assert!(
                f.doc.contains(&example),
                "{} doc lacks a CLI example",
                f.name
            );
        }
    }
}
