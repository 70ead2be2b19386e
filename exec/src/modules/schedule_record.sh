#!/usr/bin/env bash
# Records Salt 3007.8's answers to every schedule.* function into schedule_salt3007.json:
# `schedule_record.sh > schedule_salt3007.json`. A masterless Salt minion daemon
# (`master_type: disable`, minion id m1; it compiles no pillar, so the pillar's jobs are
# left to the end-to-end tests) runs its
# scheduler; each case is `salt-call --local -c DIR --out json schedule.<fun> ...` against it,
# so the request goes over the minion's event bus to that scheduler and the answer comes back
# in its `/salt/minion/minion_schedule_*_complete` event, as on any Salt minion. The cases run
# in order on one schedule; times in the answers (next fire times, job_status's `_` keys) are
# replaced by "<time>", since they depend on when the recording ran. Made with a venv:
# `python3 -m venv /tmp/salt-venv && /tmp/salt-venv/bin/pip install salt==3007.8` plus Salt's
# requirements/base.txt.
set -euo pipefail
VENV=${SALT_VENV:-/tmp/salt-venv}
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
cat > "$work/minion" <<YAML
id: m1
file_client: local
master_type: disable
root_dir: $work/root
pki_dir: $work/root/pki
cachedir: $work/root/cache
sock_dir: $work/root/sock
log_file: $work/root/log
YAML
"$VENV/bin/salt-minion" -c "$work" -l quiet &
pid=$!
# The minion's bus is up once an event can be fired and heard.
for _ in $(seq 60); do
  if "$VENV/bin/salt-call" --local -c "$work" --out json schedule.is_enabled >/dev/null 2>&1; then
    break
  fi
  sleep 1
done

# One case a line: the function, then its arguments as salt-call takes them.
cases=(
  "schedule.list return_yaml=False"
  "schedule.list where=pillar return_yaml=False"
  "schedule.list where=opts return_yaml=False"
  "schedule.add job1 function=test.ping seconds=3600"
  "schedule.add job1 function=test.ping seconds=3600"
  "schedule.add job2 function=test.ping seconds=10 cron=*/5"
  "schedule.add job3 function=test.arg job_args=[1,2] job_kwargs={\"a\":1} minutes=30 splay=10"
  "schedule.add job4 function=test.ping when=5:00pm test=True"
  "schedule.add job5 function=test.ping job_args=notalist seconds=5"
  "schedule.list return_yaml=False"
  "schedule.list"
  "schedule.list show_all=True return_yaml=False"
  "schedule.is_enabled"
  "schedule.is_enabled name=job1"
  "schedule.is_enabled name=nope"
  "schedule.disable_job job1"
  "schedule.list show_disabled=False return_yaml=False"
  "schedule.disable_job job1 test=True"
  "schedule.enable_job job1"
  "schedule.enable_job nope"
  "schedule.modify job1 function=test.ping seconds=7200"
  "schedule.modify job1 function=test.ping seconds=7200"
  "schedule.modify job1 function=test.ping seconds=60 test=True"
  "schedule.modify nope function=test.ping seconds=60"
  "schedule.modify job1 seconds=60 when=5pm"
  "schedule.disable"
  "schedule.is_enabled"
  "schedule.enable"
  "schedule.disable test=True"
  "schedule.save"
  "schedule.save test=True"
  "schedule.skip_job job1 current_time=2030-01-01T00:00:00"
  "schedule.skip_job job1 current_time=soon"
  "schedule.skip_job nope current_time=2030-01-01T00:00:00"
  "schedule.postpone_job job1 current_time=2030-01-02T00:00:00 new_time=2030-01-02T01:00:00"
  "schedule.list return_yaml=False"
  "schedule.show_next_fire_time job1"
  "schedule.show_next_fire_time nope"
  "schedule.job_status nope"
  "schedule.run_job nope"
  "schedule.reload"
  "schedule.copy job1 m2 test=True"
  "schedule.copy job1 m2"
  "schedule.move job1 m2"
  "schedule.move nope m2"
  "schedule.delete job1 test=True"
  "schedule.delete job1"
  "schedule.delete job1"
  "schedule.purge test=True"
  "schedule.purge"
  "schedule.list return_yaml=False"
)
echo '{'
echo '  "_recorded": "exec/src/modules/schedule_record.sh: salt-call --local against a masterless Salt 3007.8 minion daemon (id m1); times replaced by <time>",'
echo '  "cases": ['
sep=
for c in "${cases[@]}"; do
  read -r -a words <<<"$c"
  out=$("$VENV/bin/salt-call" --local -c "$work" --out json "${words[@]}" 2>/dev/null || true)
  printf '%s' "$sep"
  sep=$',\n'
  CASE="$c" OUT="$out" "$VENV/bin/python3" - <<'PY'
import json, os, re
from salt.utils.args import yamlify_arg
words = os.environ["CASE"].split()
fun, rest = words[0], words[1:]
args = [yamlify_arg(w) for w in rest if "=" not in w]
kwargs = {}
for w in rest:
    if "=" in w:
        k, v = w.split("=", 1)
        kwargs[k] = yamlify_arg(v)
ret = json.loads(os.environ["OUT"])["local"]
stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")
def norm(v):
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, str) and stamp.match(v) and not v.startswith("2030"):
        return "<time>"
    return v
print("    " + json.dumps({"fun": fun, "args": args, "kwargs": kwargs, "ret": norm(ret)}), end="")
PY
done
echo
echo '  ]'
echo '}'
