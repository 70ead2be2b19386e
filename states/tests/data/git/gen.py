"""Record what Salt 3007.8's `git.latest` and `git.cloned` states (`salt/states/git.py`) and
some of its `git` execution functions (`salt/modules/git.py`) answer, on a local bare
repository reached by a `file://` URL.

Regenerate (from the repository root):

    /work/saltvenv/bin/python states/tests/data/git/gen.py

`repo.sh` builds the repository with fixed names and dates, so every SHA1 is the same in
this recording and in the Rust replay (`states/tests/git_states.rs`). Steps whose function
is `cmd.run` change the remote or a checkout between the git states (`repo.sh advance`, ...);
the replay runs them too but does not compare their returns (they hold process ids).

Writes `cases.json` (the states, see `../sysrec.py`) and `exec.json`: after the last state,
[{args: salt-call arguments, ret: its return} or {args, error: Salt's message}].
"""

import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import sysrec  # noqa: E402

with open(os.path.join(HERE, "repo.sh")) as f:
    REPO_SH = f.read()

URL = "file://@DIR@/remote.git"
C1 = "e904de4bb9ce4fa9a4db3bb401c82291d4e09c7f"  # main~1 at first, tag v0.9


def sh(sid, what):
    """A step running `repo.sh <what>` in the scratch directory."""
    return (sid, "cmd.run", [{"name": f"sh @DIR@/repo.sh {what}"}], False)


def latest(target, *extra):
    return [{"name": URL}, {"target": target}, *extra]


L = "git.latest"
C = "git.cloned"
CLONE = "@DIR@/clone"
STEPS = [
    # Target missing: clone.
    ("clone_test", L, latest(CLONE), True),
    ("clone", L, latest(CLONE), False),
    ("uptodate", L, latest(CLONE), False),
    ("uptodate_test", L, latest(CLONE), True),
    # The remote moves on: fetch and fast-forward.
    sh("advance1", "advance @DIR@"),
    ("ff_test", L, latest(CLONE), True),
    ("ff", L, latest(CLONE), False),
    # Local changes: up to date but dirty, then behind and dirty.
    sh("dirty1", "dirty @DIR@/clone"),
    ("dirty_uptodate", L, latest(CLONE), False),
    ("dirty_uptodate_force_test", L, latest(CLONE, {"force_reset": True}), True),
    ("dirty_uptodate_remote_changes", L, latest(CLONE, {"force_reset": "remote-changes"}), False),
    sh("advance2", "advance @DIR@"),
    ("dirty_behind_test", L, latest(CLONE), True),
    ("dirty_behind", L, latest(CLONE), False),
    ("dirty_behind_force_test", L, latest(CLONE, {"force_reset": True}), True),
    ("dirty_behind_force", L, latest(CLONE, {"force_reset": True}), False),
    # History rewritten on the remote: not a fast-forward.
    sh("rewrite", "rewrite @DIR@"),
    ("non_ff_test", L, latest(CLONE), True),
    ("non_ff", L, latest(CLONE), False),
    ("non_ff_force_test", L, latest(CLONE, {"force_reset": True}), True),
    ("non_ff_force", L, latest(CLONE, {"force_reset": True}), False),
    # The hard reset did not fetch (the commit was already there): origin/main is still the
    # old one, and only a forced fetch moves it.
    sh("advance3", "advance @DIR@"),
    ("stale_fetch", L, latest(CLONE), False),
    ("force_fetch_test", L, latest(CLONE, {"force_fetch": True}), True),
    ("force_fetch", L, latest(CLONE, {"force_fetch": True}), False),
    # A new tag on the remote.
    sh("newtag", "newtag @DIR@"),
    ("newtag_test", L, latest(CLONE), True),
    ("newtag", L, latest(CLONE), False),
    # Another branch.
    ("branch_test", L, latest(CLONE, {"rev": "dev"}, {"branch": "dev"}), True),
    ("branch", L, latest(CLONE, {"rev": "dev"}, {"branch": "dev"}), False),
    ("branch_again", L, latest(CLONE, {"rev": "dev"}, {"branch": "dev"}), False),
    ("branch_back", L, latest(CLONE, {"rev": "main"}, {"branch": "main"}), False),
    # The remote's URL spelled differently: the remote is changed.
    ("remote_url_test", L, [{"name": "@DIR@/remote.git"}, {"target": CLONE}], True),
    ("remote_url", L, [{"name": "@DIR@/remote.git"}, {"target": CLONE}], False),
    ("update_head_false", L, latest(CLONE, {"rev": "v1.0"}, {"update_head": False}), False),
    # A tag, and a commit, into fresh targets.
    ("tag_test", L, latest("@DIR@/tagged", {"rev": "v1.0"}), True),
    ("tag", L, latest("@DIR@/tagged", {"rev": "v1.0"}), False),
    ("tag_again", L, latest("@DIR@/tagged", {"rev": "v1.0"}), False),
    ("lightweight_tag", L, latest("@DIR@/tagged", {"rev": "v0.9"}), False),
    ("sha", L, latest("@DIR@/bysha", {"rev": C1}), False),
    ("sha_short_again", L, latest("@DIR@/bysha", {"rev": C1[:7]}), False),
    ("depth", L, latest("@DIR@/shallow", {"rev": "main"}, {"depth": 1}), False),
    ("depth_sha", L, latest("@DIR@/shallow2", {"rev": C1}, {"depth": 1}), False),
    ("other_remote", L, latest("@DIR@/upstream", {"remote": "upstream"}), False),
    # Tags added and deleted on the remote, seen by a fresh clone.
    ("tags_clone", L, latest("@DIR@/tags"), False),
    ("tags_clone2", L, latest("@DIR@/tags2", {"sync_tags": False}), False),
    sh("retag", "retag @DIR@"),
    ("tags_test", L, latest("@DIR@/tags"), True),
    ("tags", L, latest("@DIR@/tags"), False),
    ("tags_again", L, latest("@DIR@/tags"), False),
    ("tags_no_sync", L, latest("@DIR@/tags2", {"sync_tags": False}), False),
    # The remote's URL changed, then the remote removed from the checkout.
    ("url_clone", L, latest("@DIR@/urlc"), False),
    ("url_change_test", L, [{"name": "@DIR@/remote.git"}, {"target": "@DIR@/urlc"}], True),
    ("url_change", L, [{"name": "@DIR@/remote.git"}, {"target": "@DIR@/urlc"}], False),
    (
        "remote_rm",
        "cmd.run",
        [{"name": "git remote rm origin"}, {"cwd": "@DIR@/urlc"}],
        False,
    ),
    ("remote_missing", L, latest("@DIR@/urlc"), False),
    # Switching branch over uncommitted changes.
    sh("dirty2", "dirty @DIR@/urlc"),
    ("checkout_dirty", L, latest("@DIR@/urlc", {"rev": "dev"}, {"branch": "dev"}), False),
    (
        "checkout_dirty_force",
        L,
        latest("@DIR@/urlc", {"rev": "dev"}, {"branch": "dev"}, {"force_checkout": True}, {"force_reset": True}),
        False,
    ),
    # Bare and mirror clones.
    ("bare_test", L, latest("@DIR@/bare.git", {"bare": True}), True),
    ("bare", L, latest("@DIR@/bare.git", {"bare": True}), False),
    ("bare_again_test", L, latest("@DIR@/bare.git", {"bare": True}), True),
    ("bare_again", L, latest("@DIR@/bare.git", {"bare": True}), False),
    ("mirror", L, latest("@DIR@/mirror.git", {"mirror": True}), False),
    ("bare_with_rev", L, latest("@DIR@/bare2.git", {"bare": True}, {"rev": "dev"}), False),
    # Identity files (not used by file:// URLs, but checked).
    ("identity_missing", L, latest("@DIR@/ident", {"identity": "@DIR@/no_such_key"}), False),
    ("identity_relative", L, latest("@DIR@/ident", {"identity": "keys/id"}), False),
    ("identity_bad_type", L, latest("@DIR@/ident", {"identity": 5}), False),
    ("identity", L, latest("@DIR@/ident", {"identity": ["@DIR@/no_such_key", "@DIR@/id_key"]}), False),
    # A tag moved on the remote.
    sh("movetag", "movetag @DIR@"),
    ("tag_moved_test", L, latest("@DIR@/tagged", {"rev": "v1.0"}), True),
    ("tag_moved", L, latest("@DIR@/tagged", {"rev": "v1.0"}), False),
    ("tag_moved_force", L, latest("@DIR@/tagged", {"rev": "v1.0"}, {"force_reset": True}), False),
    # An empty remote.
    ("empty_clone", L, [{"name": "file://@DIR@/empty.git"}, {"target": "@DIR@/emptyc"}], False),
    ("empty_again", L, [{"name": "file://@DIR@/empty.git"}, {"target": "@DIR@/emptyc"}], False),
    ("empty_rev", L, [{"name": "file://@DIR@/empty.git"}, {"target": "@DIR@/emptyc2"}, {"rev": "main"}], False),
    ("to_empty", L, [{"name": "file://@DIR@/empty.git"}, {"target": "@DIR@/tags"}], False),
    # update_head=False when the remote moved on.
    sh("advance4", "advance @DIR@"),
    ("no_head_test", L, latest("@DIR@/tags", {"update_head": False}), True),
    ("no_head", L, latest("@DIR@/tags", {"update_head": False}), False),
    ("no_head_again", L, latest("@DIR@/tags", {"update_head": False}), False),
    # 'remote-changes': local changes are discarded only because the remote moved.
    sh("dirty3", "dirty @DIR@/tags2"),
    ("remote_changes", L, latest("@DIR@/tags2", {"force_reset": "remote-changes"}), False),
    # Targets that are not clones.
    ("plain_dir", L, latest("@DIR@/plain"), False),
    ("plain_dir_force_test", L, latest("@DIR@/plain", {"force_clone": True}), True),
    ("plain_dir_force", L, latest("@DIR@/plain", {"force_clone": True}), False),
    ("empty_dir", L, latest("@DIR@/emptydir"), False),
    ("target_file", L, latest("@DIR@/afile"), False),
    # Bad arguments.
    ("bad_rev", L, latest("@DIR@/nosuch", {"rev": "nosuch"}), False),
    ("relative_target", L, latest("relative/dir"), False),
    ("bad_force_reset", L, latest(CLONE, {"force_reset": "yes"}), False),
    ("bad_kwarg", L, latest(CLONE, {"frobnicate": True}), False),
    ("bad_url", L, [{"name": "file://@DIR@/missing.git"}, {"target": "@DIR@/x"}], False),
    ("https_user_on_file_url", L, latest("@DIR@/x", {"https_user": "me"}), False),
    # git.cloned
    ("cloned_test", C, [{"name": URL}, {"target": "@DIR@/c"}], True),
    ("cloned", C, [{"name": URL}, {"target": "@DIR@/c"}], False),
    ("cloned_again", C, [{"name": URL}, {"target": "@DIR@/c"}], False),
    ("cloned_branch_test", C, [{"name": URL}, {"target": "@DIR@/c"}, {"branch": "dev"}], True),
    ("cloned_branch", C, [{"name": URL}, {"target": "@DIR@/c"}, {"branch": "dev"}], False),
    ("cloned_branch_again", C, [{"name": URL}, {"target": "@DIR@/c"}, {"branch": "dev"}], False),
    ("cloned_branch_back", C, [{"name": URL}, {"target": "@DIR@/c"}, {"branch": "main"}], False),
    ("cloned_new_with_branch", C, [{"name": URL}, {"target": "@DIR@/c2"}, {"branch": "dev"}], False),
    ("cloned_bad_branch", C, [{"name": URL}, {"target": "@DIR@/c"}, {"branch": "nosuch"}], False),
    ("cloned_relative", C, [{"name": URL}, {"target": "rel"}], False),
    ("cloned_not_git", C, [{"name": URL}, {"target": "@DIR@/plain2"}], False),
    ("cloned_bad_url", C, [{"name": "file://@DIR@/missing.git"}, {"target": "@DIR@/c3"}], False),
]

# salt-call arguments, run in order after the states (`@DIR@` is the scratch directory).
EXEC = [
    ["git.rev_parse", "@DIR@/clone", "HEAD"],
    ["git.rev_parse", "@DIR@/clone", "v1.0^{commit}"],
    ["git.rev_parse", "@DIR@/clone", "main@{upstream}", "opts=--abbrev-ref"],
    ["git.revision", "@DIR@/clone"],
    ["git.revision", "@DIR@/clone", "dev", "short=True"],
    ["git.current_branch", "@DIR@/clone"],
    ["git.current_branch", "@DIR@/tagged"],
    ["git.remote_get", "@DIR@/clone"],
    ["git.remote_get", "@DIR@/clone", "nosuch"],
    ["git.remotes", "@DIR@/upstream"],
    ["git.status", "@DIR@/clone"],
    ["git.list_branches", "@DIR@/clone"],
    ["git.list_branches", "@DIR@/clone", "remote=True"],
    ["git.list_tags", "@DIR@/clone"],
    ["git.ls_remote", "@DIR@/clone"],
    ["git.ls_remote", "remote=file://@DIR@/remote.git", "ref=dev"],
    ["git.remote_refs", "file://@DIR@/remote.git", "tags=True"],
    ["git.fetch", "@DIR@/clone"],
    ["git.merge_base", "@DIR@/clone", f"refs={C1},HEAD", "is_ancestor=True"],
    ["git.merge_base", "@DIR@/clone", "refs=dev,HEAD", "is_ancestor=True"],
    ["git.merge_base", "@DIR@/clone", "refs=dev,main"],
    ["git.is_worktree", "@DIR@/clone"],
    ["git.diff", "@DIR@/clone", "HEAD~1", "HEAD", "opts=--stat"],
    ["git.init", "@DIR@/fresh"],
    ["git.init", "@DIR@/fresh.git", "bare=True"],
    ["git.clone", "@DIR@/exec_clone", "file://@DIR@/remote.git"],
    ["git.clone", "@DIR@/exec_clone2", "file://@DIR@/missing.git"],
    ["git.clone", "@DIR@/exec_clone3", "file://@DIR@/remote.git", "https_user=me"],
    ["git.checkout", "@DIR@/exec_clone", "dev"],
    ["git.checkout", "@DIR@/exec_clone", "opts=-b topic"],
    ["git.checkout", "@DIR@/exec_clone"],
    ["git.current_branch", "@DIR@/exec_clone"],
    ["git.reset", "@DIR@/exec_clone", "opts=--hard main"],
    ["git.revision", "@DIR@/exec_clone"],
    ["git.remote_set", "@DIR@/exec_clone", "file://@DIR@/remote.git", "remote=upstream"],
    ["git.remote_set", "@DIR@/exec_clone", "@DIR@/remote.git", "push_url=file:///nowhere"],
    ["git.remotes", "@DIR@/exec_clone"],
    ["git.tag", "@DIR@/exec_clone", "local-tag"],
    ["git.list_tags", "@DIR@/exec_clone"],
    ["git.branch", "@DIR@/exec_clone", "other"],
    ["git.list_branches", "@DIR@/exec_clone"],
    ["git.symbolic_ref", "@DIR@/exec_clone", "HEAD"],
    ["git.rev_parse", "@DIR@/exec_clone", "nosuch"],
    ["git.rev_parse", "@DIR@/not-there", "HEAD"],
    ["git.status", "@DIR@/exec_clone"],
    ["git.status", "@DIR@/clone", "user=nosuchuser"],
    ["git.version"],
]


def prepare(scratch):
    subprocess.run(["sh", scratch + "/repo.sh", "init", scratch], check=True)
    os.makedirs(scratch + "/plain")
    os.makedirs(scratch + "/plain2")
    os.makedirs(scratch + "/emptydir")
    for rel in ("plain/keep.txt", "plain2/keep.txt", "afile", "id_key"):
        with open(os.path.join(scratch, rel), "w") as f:
            f.write("not a repository\n")


def record_exec(scratch):
    conf = scratch + "-conf"
    os.makedirs(conf, exist_ok=True)
    with open(conf + "/minion", "w") as f:
        json.dump(
            {
                "file_client": "local",
                "cachedir": conf + "/cache",
                "root_dir": conf,
                "pki_dir": conf + "/pki",
                "log_file": conf + "/log",
                "user": "root",
                "id": "labminion",
            },
            f,
        )
    # An untracked and a modified file for git.status.
    with open(scratch + "/clone/untracked.txt", "w") as f:
        f.write("new\n")
    with open(scratch + "/clone/README", "a") as f:
        f.write("edit\n")
    cases = []
    for args in EXEC:
        real = sysrec.subst(args, "@DIR@", scratch)
        cmd = [sysrec.SALT_CALL, "--local", "-c", conf, "--out", "json", *real]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd="/")
        case = {"args": args}
        invalid = "Passed invalid arguments: "
        if proc.returncode == 0:
            case["ret"] = sysrec.subst(json.loads(proc.stdout)["local"], scratch, "@DIR@")
        elif invalid in proc.stderr:
            # A SaltInvocationError: salt-call adds a period and the function's usage.
            err = proc.stderr[proc.stderr.index(invalid) + len(invalid):].split("\n")[0]
            case["invalid"] = sysrec.subst(err.removesuffix("."), scratch, "@DIR@")
        else:
            marker = f"Error running '{args[0]}': "
            err = proc.stderr[proc.stderr.index(marker) + len(marker):].rstrip("\n")
            case["error"] = sysrec.subst(err, scratch, "@DIR@")
        print(json.dumps(case), file=sys.stderr)
        cases.append(case)
    shutil.rmtree(conf, ignore_errors=True)
    with open(os.path.join(HERE, "exec.json"), "w") as f:
        json.dump(cases, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    scratch = sysrec.record(HERE, STEPS, setup={"repo.sh": REPO_SH}, prepare=prepare)
    record_exec(scratch)
    shutil.rmtree(scratch, ignore_errors=True)
