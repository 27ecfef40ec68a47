"""Data files and gnuplot images for the compare scripts of bench/."""
import os
import shutil
import subprocess


def plot(out_dir, stem, title, xlabel, ylabel, variants, rows, logscale="xy"):
    """Writes <stem>.dat (rows: [(x, [value or None per variant])]) and, when
    gnuplot is there, <stem>.png and .svg; returns the image names made."""
    data = os.path.join(out_dir, stem + ".dat")
    with open(data, "w") as f:
        f.write("# x " + " ".join('"%s"' % v for v in variants) + "\n")
        for x, values in rows:
            f.write("%g %s\n" % (x, " ".join("%g" % v if v is not None else "NaN"
                                             for v in values)))
    made = []
    if shutil.which("gnuplot") is None:
        return made
    for ext, terminal in (("png", "pngcairo noenhanced size 800,500"),
                          ("svg", "svg noenhanced size 800,500")):
        image = os.path.join(out_dir, stem + "." + ext)
        series = ", ".join("'%s' using 1:%d with linespoints title '%s'" % (data, i + 2, v)
                           for i, v in enumerate(variants))
        script = "\n".join([
            "set terminal " + terminal, "set output '%s'" % image,
            ("set logscale " + logscale) if logscale else "", "set grid", "set key left top",
            "set title '%s'" % title, "set xlabel '%s'" % xlabel, "set ylabel '%s'" % ylabel,
            "set datafile missing 'NaN'", "plot " + series])
        proc = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
        if proc.returncode == 0 and os.path.exists(image):
            made.append(os.path.basename(image))
    return made
