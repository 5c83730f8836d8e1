"""Layer 4: copy and MMA atoms, CuTe's way: a thread-value layout plus the instruction."""
