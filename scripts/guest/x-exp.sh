#!/usr/bin/env bash
# temporary experiment
hostping=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bash "$here/hosts-net.sh" 2 >/dev/null
bw() { python3 -c "
import json,sys
for line in sys.stdin:
    line=line.strip()
    if not line.startswith('{'): continue
    d=json.loads(line); print('[' + ' '.join('%.2f'%p['bandwidth_gbps'] for p in d['paths'])+']', end=' ')
print()"; }
for k in 1 2 3; do echo -n "check --runs 5: "; ip netns exec h1 "$hostping" check --runs 5 --iterations 200 --format json 2>/dev/null | bw; done
for k in 1 2 3; do ip netns exec h1 "$hostping" baseline --runs 5 --iterations 200 -o /tmp/b.json >/dev/null 2>&1; echo -n "baseline: "; bw < <(python3 -c "import json; print(json.dumps(json.load(open('/tmp/b.json'))))"); done
for k in 1 2 3; do echo -n "check x1: "; ip netns exec h1 "$hostping" check --iterations 200 --format json 2>/dev/null | bw; done
