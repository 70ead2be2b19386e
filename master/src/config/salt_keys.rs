//! The key table against Salt 3007.8's own tables (`saltq_states::saltconf::salt_tables`).

use saltq_states::saltconf::{Daemon, salt_tables, struct_fields};

use super::RawConfig;

#[test]
fn every_salt_key_has_a_declared_kind_and_the_table_only_salts() {
    salt_tables::assert_table_matches_salt(Daemon::Master, struct_fields::<RawConfig>());
}

#[test]
fn salts_own_defaults_load() {
    salt_tables::assert_salt_defaults_load::<RawConfig>(Daemon::Master);
}
