"""Two ranks with gloo on cpu, initialised exactly as under torchrun (env:// variables)."""

from __future__ import annotations

import os
import socket

import pointmass_task
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.train.distributed import context_from_env, shutdown_distributed
from primebot.pipeline.train.log import read_csv_rows
from primebot.pipeline.train.session import TrainRequest, run_training


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank: int, world: int, port: int, log_dir: str, out_dir: str) -> None:
    # What torchrun sets for each process it starts.
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), PRIMEBOT_DIST_TIMEOUT_S="120")
    torch.set_num_threads(1)
    host = load_plugins(extra=[("pointmass", pointmass_task)])
    out = run_training(host.registry,
                       TrainRequest(task="pointmass", num_envs=8, iterations=3, device="cpu",
                                                   log_dir=log_dir, run_name="ddp", progress=False))
    runner = out.runner
    params = torch.cat([p.detach().flatten() for p in runner.ppo.actor_critic.parameters()])
    gathered = [torch.zeros_like(params) for _ in range(world)]
    dist.all_gather(gathered, params)
    torch.save({
        "params": gathered,
        "run_dir": str(out.run_dir) if out.run_dir else None,
        "obs_mean": runner.ppo.obs_normalizer.mean.clone(),
        "obs": torch.from_numpy(runner.transfer.obs.copy()),
    }, os.path.join(out_dir, f"rank{rank}.pt"))
    shutdown_distributed()
    # Skip interpreter teardown: in about 1 of 10 full-suite runs gloo's threads were still
    # being torn down by static destructors and aborted the child ("terminate called
    # without an active exception") after everything above had finished and been saved.
    os._exit(0)


def test_two_gloo_ranks_keep_identical_parameters_and_only_rank0_writes(tmp_path):
    log_dir, out_dir = tmp_path / "logs", tmp_path / "out"
    out_dir.mkdir()
    mp.spawn(_rank_main, args=(2, _free_port(), str(log_dir), str(out_dir)), nprocs=2, join=True)
    r0, r1 = (torch.load(out_dir / f"rank{r}.pt", weights_only=True) for r in (0, 1))
    assert torch.equal(r0["params"][0], r0["params"][1])  # identical across ranks after 3 updates
    assert torch.equal(r0["obs_mean"], r1["obs_mean"])  # normaliser statistics merged over ranks
    assert not torch.equal(r0["obs"], r1["obs"])  # yet each rank stepped its own environments
    assert r1["run_dir"] is None and r0["run_dir"] is not None
    assert len(list((log_dir / "ddp").iterdir())) == 1
    _, rows = read_csv_rows(os.path.join(r0["run_dir"], "train.csv"))
    assert rows[-1]["env_steps"] == str(3 * 2 * 8 * 16)  # iterations × ranks × envs × steps


def test_context_reads_torchrun_variables():
    ctx = context_from_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"})
    assert (ctx.rank, ctx.world_size, ctx.local_rank, ctx.is_main, ctx.enabled) == (
        3,
        4,
        1,
        False,
        True,
    )
    single = context_from_env({})
    assert single.is_main and not single.enabled
