#!/bin/bash
# Two "nodes" started the way DeepSpeed's PDSHRunner starts them: pdsh runs one launcher
# per host with --node_rank=%n; each output line comes back as "HOST: LINE". Both hosts
# are this machine (pdsh's exec module), one named by address, one by name.
cd "$(dirname "$0")"
pdsh -S -R exec -f 1024 -w 127.0.0.1,localhost \
  bash -c "cd $PWD && /usr/bin/python3 torchrun.py --nnodes=2 --node_rank=%n --nproc_per_node=1 --tee 3 --master_addr=127.0.0.1 --master_port=29544 ddp_raise.py"
