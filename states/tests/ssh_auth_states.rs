//! `ssh_auth.*` states replayed for real against Salt 3007.8's answers on this kind of host
//! (`data/users/ssh_auth.json`, recorded by `data/users/gen.py`): throwaway accounts with fixed
//! names and ids (47xxx) are created, changed and removed in Salt's order, each step compared
//! with what Salt answered. Needs root and the tools named below; skipped with a message
//! otherwise.

#[path = "accounts/mod.rs"]
mod accounts;

#[tokio::test]
async fn ssh_auth_states_match_salt() {
    if let Some(why) = accounts::missing(&["useradd", "groupadd"]) {
        eprintln!("skipped: {why}");
        return;
    }
    let n = accounts::replay("ssh_auth", &[]).await;
    assert_eq!(n, 25);
}
