//! Job cache tests: one behaviour suite run against SQLite and PostgreSQL (the latter when
//! `SALTQ_TEST_POSTGRES` names a server), plus what only one backend can show.

mod postgres_only;
mod sqlite_only;
mod suite;
mod support;

/// Runs each suite test against both backends, as `sqlite::<name>` and `postgres::<name>`.
macro_rules! both_backends {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $test() {
                    let fixture = crate::support::Fixture::sqlite();
                    crate::suite::$test(&fixture).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $test() {
                    let Some(fixture) = crate::support::Fixture::postgres(stringify!($test)).await else {
                        return;
                    };
                    crate::suite::$test(&fixture).await;
                }
            )*
        }
    };
}

both_backends!(
    save_and_get_job,
    returns_in_stored_order,
    duplicate_return_dropped,
    unknown_jid_refused,
    list_jobs_filters,
    last_jid_only_grows,
    prune_keeps_last_jid,
    reopen_keeps_everything,
    burst_is_batched,
    two_handles_share,
    allocated_jids_are_unique_across_handles,
    add_minions_merges,
);
