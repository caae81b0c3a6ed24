"""A B200 performance model of the book's own kernels: one SM's share of a full-size problem runs
on the emulator's virtual clock in timing mode (``share``), and the chip around it (``chip``)
supplies the SM count, waves, the persistent schedule, L2/HBM and launch overhead. Every physical
parameter, with its source, is in ``params``. A MODEL, never a measurement."""

MODEL_LABEL = ("MODEL: B200 performance model (gemm_kernels.perf: emulator virtual clock + chip model, "
               "published physical parameters), not a measurement")
