"""What the install checks share: a temporary install of the build, an
environment with nothing that would point at the build tree, a C program
that prints which libuc* files it mapped, and failure bookkeeping."""
import json
import os
import subprocess

# Prints, with PRINT_VERSION defined, ucp_get_version's "version X.Y" first,
# then the /proc/self/maps lines of the libuc* libraries it runs on.
MAPS_PROGRAM = r"""
#include <ucp/api/ucp.h>
#include <stdio.h>
#include <string.h>
int main(void) {
#ifdef PRINT_VERSION
    unsigned major, minor, release;
    ucp_get_version(&major, &minor, &release);
    printf("version %u.%u\n", major, minor);
#endif
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features = UCP_FEATURE_TAG};
    ucp_context_h context;
    if (ucp_init(&params, NULL, &context) != UCS_OK) { return 3; }
    char line[4096];
    FILE *maps = fopen("/proc/self/maps", "r");
    while (fgets(line, sizeof(line), maps)) {
        if (strstr(line, "/libuc")) { fputs(line, stdout); }
    }
    fclose(maps);
    ucp_cleanup(context);
    return 0;
}
"""

failures = []


def fail(what):
    failures.append(what)
    print("FAIL: " + what)


def clean_env():
    """The caller's environment without what would lead to the build tree."""
    env = dict(os.environ)
    for name in ("LD_LIBRARY_PATH", "UCX_MODULE_DIR", "UCX_MODULES"):
        env.pop(name, None)
    env["UCX_CONFIG_FILE"] = ""
    return env


def build_options(build):
    """meson's build options of `build`, by name."""
    out = subprocess.run(["meson", "introspect", "--buildoptions", build],
                         capture_output=True, text=True, check=True).stdout
    return {o["name"]: o["value"] for o in json.loads(out)}


def install(build, dest):
    """Installs `build` under DESTDIR `dest`; returns (root, options)."""
    subprocess.run(["meson", "install", "-C", build, "--no-rebuild", "--destdir", dest,
                    "--quiet"], check=True, stdout=subprocess.DEVNULL)
    opts = build_options(build)
    return dest + opts["prefix"], opts
