"""How the compare scripts of bench/ start an MPI program on either library."""
import os

RUNTIMES = (("Open MPI", "mpirun.openmpi"), ("MPICH", "mpiexec.mpich"))


def command(runtime, launcher, nprocs, argv, libs, base_env, oversubscribe=False):
    """(cmd, env) running `argv` on `nprocs` ranks under `runtime`, on the UCX
    in `libs` (a LD_LIBRARY_PATH; None: the system's UCX 1.13)."""
    env = dict(base_env)
    env.pop("UCX_CONFIG_FILE", None)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               UCX_WARN_UNUSED_ENV_VARS="n")
    if runtime == "Open MPI":
        # Force the UCX PML: no silent fall back to another transport.
        cmd = [launcher, "-np", str(nprocs), "--mca", "pml", "ucx",
               "--mca", "pml_ucx_tls", "any", "--mca", "pml_ucx_devices", "any",
               "--mca", "btl", "self"]
        if oversubscribe:
            cmd += ["--oversubscribe"]
        if libs:
            cmd += ["-x", "LD_LIBRARY_PATH=" + libs]
    else:
        cmd = [launcher, "-n", str(nprocs)]
        if libs:
            env["LD_LIBRARY_PATH"] = libs
    return cmd + list(argv), env
