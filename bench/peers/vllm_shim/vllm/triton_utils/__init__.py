import triton
import triton.language as tl

HAS_TRITON = True
