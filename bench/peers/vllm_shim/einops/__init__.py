"""The two rearranges ssd_combined.py uses: merge or split the last two axes."""


def rearrange(t, pattern, **sizes):
    if pattern == "... p n -> ... (p n)":
        return t.reshape(*t.shape[:-2], t.shape[-2] * t.shape[-1])
    if pattern == "... (p n) -> ... p n":
        n = sizes["n"]
        return t.reshape(*t.shape[:-1], t.shape[-1] // n, n)
    raise NotImplementedError(pattern)
