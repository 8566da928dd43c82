"""Pipeline stages: the stage contract, the runner, the run record and the presets."""
