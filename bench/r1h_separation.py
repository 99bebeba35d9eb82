"""How often R1's and R1h's per-output bands reject the defects they guard
against, on full-range e4m3 codes at the NemotronH projection shapes (no GPU:
numpy only). The floors of ProjectionCheck (models/nemotron_h/Check.h) come from
these shares. Usage: /usr/bin/python3 bench/r1h_separation.py"""

import numpy as np


def e4m3(v):
    """Round to the e4m3 grid (saturating at 448; subnormals 2^-9 apart)."""
    v = np.clip(v, -448, 448)
    a = np.abs(v)
    exponent = np.maximum(np.floor(np.log2(np.maximum(a, 2.0 ** -9))), -6)
    step = 2.0 ** (exponent - 3)
    return np.sign(v) * np.round(a / step) * step


def main():
    rng = np.random.default_rng(1)
    for k, n in ((2688, 10304), (4096, 2688)):
        w = e4m3(rng.uniform(-448, 448, (n, k)))
        a = e4m3(rng.uniform(-2, 2, (8, k)) / (8 / 448))  # the synthetic s_x
        y = a @ w.T
        magnitude = np.abs(a) @ np.abs(w).T
        ulp = 2.0 ** (np.floor(np.log2(np.abs(y))) - 7)
        for name, factor in (("R1h (reduced)", 2.0 ** -8), ("R1 (exact)", k * 2.0 ** -24)):
            band = ulp + factor * magnitude
            dropped = a[:, :-32] @ w[:, :-32].T
            print(f"K={k} {name}: a dropped K step rejected on "
                  f"{100 * np.mean(np.abs(dropped - y) > band):.1f} %, an output's weights "
                  f"x 9/8 on {100 * np.mean(np.abs(y / 8) > band):.1f} %")


if __name__ == "__main__":
    main()
