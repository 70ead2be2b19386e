#!/bin/sh
# The git states' test repository, built the same way by gen.py (Salt's recording) and by
# states/tests/git_states.rs (saltq's replay): fixed names, emails and dates, and no user or
# system git config, so every commit and tag has the same SHA1 on every machine.
#
#   repo.sh init DIR      DIR/remote.git (bare, HEAD -> main) and DIR/seed, its work clone:
#                         main: c1 (tag v0.9) - c2 (annotated tag v1.0); dev: c2 - c3
#   repo.sh advance DIR   one more commit on main, pushed
#   repo.sh rewrite DIR   main's last commit replaced by another (a non-fast-forward push)
#   repo.sh newtag DIR    tag v2.0 on main, pushed
#                         and DIR/empty.git, an empty bare repository
#   repo.sh movetag DIR   tag v1.0 moved to c1 on the remote (a forced tag push)
#   repo.sh retag DIR     tag v3.0 on main pushed, tag v0.9 deleted from the remote
#   repo.sh dirty PATH    a local change to PATH/README
set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
export GIT_AUTHOR_NAME="Salt Test" GIT_AUTHOR_EMAIL="test@example.com"
export GIT_COMMITTER_NAME="Salt Test" GIT_COMMITTER_EMAIL="test@example.com"
unset GIT_DIR GIT_WORK_TREE

# commit N MESSAGE: a commit dated N days after 2024-01-01 of what is staged in the seed.
commit() {
    export GIT_AUTHOR_DATE="$((1704067200 + $1 * 86400)) +0000"
    export GIT_COMMITTER_DATE="$GIT_AUTHOR_DATE"
    git -C "$SEED" commit -q -m "$2"
}

cmd=$1
DIR=$2
SEED=$DIR/seed
case $cmd in
init)
    git init -q --bare -b main "$DIR/remote.git"
    git init -q --bare -b main "$DIR/empty.git"
    git init -q -b main "$SEED"
    git -C "$SEED" remote add origin "$DIR/remote.git"
    printf 'first\n' > "$SEED/README"
    git -C "$SEED" add README
    commit 1 "c1"
    git -C "$SEED" tag v0.9
    printf 'second\n' >> "$SEED/README"
    git -C "$SEED" add README
    commit 2 "c2"
    GIT_COMMITTER_DATE="1704326400 +0000" git -C "$SEED" tag -a -m "release 1.0" v1.0
    git -C "$SEED" checkout -q -b dev
    printf 'dev work\n' > "$SEED/DEV"
    git -C "$SEED" add DEV
    commit 3 "c3"
    git -C "$SEED" checkout -q main
    git -C "$SEED" push -q origin main dev v0.9 v1.0
    ;;
advance)
    n=$(git -C "$SEED" rev-list --count main)
    printf 'line %s\n' "$n" >> "$SEED/README"
    git -C "$SEED" add README
    commit "$((n + 10))" "advance $n"
    git -C "$SEED" push -q origin main
    ;;
rewrite)
    git -C "$SEED" reset -q --hard HEAD~1
    printf 'rewritten\n' >> "$SEED/README"
    git -C "$SEED" add README
    commit 30 "rewritten"
    git -C "$SEED" push -q --force origin main
    ;;
newtag)
    git -C "$SEED" tag v2.0
    git -C "$SEED" push -q origin v2.0
    ;;
movetag)
    GIT_COMMITTER_DATE="1704931200 +0000" \
        git -C "$SEED" tag -f -a -m "release 1.0, again" v1.0 'v0.9^{commit}' >/dev/null
    git -C "$SEED" push -q --force origin v1.0
    ;;
retag)
    git -C "$SEED" tag v3.0
    git -C "$SEED" push -q origin v3.0 :refs/tags/v0.9
    ;;
dirty)
    printf 'local change\n' >> "$DIR/README"
    ;;
*)
    echo "repo.sh: unknown command $cmd" >&2
    exit 64
    ;;
esac
