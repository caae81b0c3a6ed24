// Host-only oracle for tests/test_sf_layout_cutlass.py: prints what CUTLASS computes for step 11's
// block-scaled operands, so gemm_kernels.quant's packed scale-factor layout and gemm_kernels.layouts'
// instruction descriptors can be compared with an independent implementation. Our own code; it only
// calls CUTLASS's public headers (nvidia-cutlass==4.2.0.0, see README.md beside it).
//
// Output, one record per line (decimal unless prefixed 0x):
//   SF <vec> <rows> <K> <offset of (0,0)> <offset of (0,1)> ...   scale factor (row, j) of a rows x K
//        operand with one scale per <vec> elements of K, row-major over (row, j), j < K / vec: the
//        position Sm1xxBlockScaledConfig<vec>::tile_atom_to_shape_SFA gives element (row, j * vec)
//   SFB <vec> <rows> <K> ...                                     the same through tile_atom_to_shape_SFB
//   BSIDESC <a> <b> <sf> <M> <N> 0x<idesc>                       make_instr_desc_block_scaled
//   F8IDESC <a> <b> <M> <N> 0x<idesc>                            make_instr_desc, f32 accumulator
#include <cstdint>
#include <cstdio>

#include <cutlass/numeric_types.h>
#include <cutlass/detail/sm100_blockscaled_layout.hpp>
#include <cute/arch/mma_sm100_desc.hpp>

using namespace cute;

namespace {

template <int Vec>
void print_sf(int rows, int k) {
  using Config = cutlass::detail::Sm1xxBlockScaledConfig<Vec>;
  // problem shape (M, N, K, L): SFA takes rows from M, SFB from N
  auto sfa = Config::tile_atom_to_shape_SFA(make_shape(rows, rows, k, 1));
  auto sfb = Config::tile_atom_to_shape_SFB(make_shape(rows, rows, k, 1));
  std::printf("SF %d %d %d", Vec, rows, k);
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < k / Vec; ++j) std::printf(" %d", int(sfa(r, j * Vec, 0)));
  std::printf("\nSFB %d %d %d", Vec, rows, k);
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < k / Vec; ++j) std::printf(" %d", int(sfb(r, j * Vec, 0)));
  std::printf("\n");
}

template <class T> const char* type_name();
template <> const char* type_name<cutlass::float_e4m3_t>() { return "e4m3"; }
template <> const char* type_name<cutlass::float_e5m2_t>() { return "e5m2"; }
template <> const char* type_name<cutlass::float_e2m1_t>() { return "e2m1"; }
template <> const char* type_name<cutlass::float_ue8m0_t>() { return "ue8m0"; }
template <> const char* type_name<cutlass::float_ue4m3_t>() { return "ue4m3"; }

template <class A, class B, class SF, int M, int N>
void print_bs() {
  const UMMA::InstrDescriptorBlockScaled d =
      UMMA::make_instr_desc_block_scaled<A, B, float, SF, M, N, UMMA::Major::K, UMMA::Major::K>();
  std::printf("BSIDESC %s %s %s %d %d 0x%08x\n", type_name<A>(), type_name<B>(), type_name<SF>(), M, N,
              static_cast<unsigned>(static_cast<uint32_t>(d)));
}

template <class A, class B, int M, int N>
void print_f8() {
  const UMMA::InstrDescriptor d = UMMA::make_instr_desc<A, B, float, M, N, UMMA::Major::K, UMMA::Major::K>();
  std::printf("F8IDESC %s %s %d %d 0x%08x\n", type_name<A>(), type_name<B>(), M, N,
              static_cast<unsigned>(static_cast<uint32_t>(d)));
}

template <class A, class B, class SF, int M>
void bs_over_n() {
  print_bs<A, B, SF, M, 16>();
  print_bs<A, B, SF, M, 64>();
  print_bs<A, B, SF, M, 128>();
  print_bs<A, B, SF, M, 200>();
  print_bs<A, B, SF, M, 256>();
}

template <class A, class B, int M>
void f8_over_n() {
  print_f8<A, B, M, 8>();
  print_f8<A, B, M, 64>();
  print_f8<A, B, M, 128>();
  print_f8<A, B, M, 256>();
}

}  // namespace

int main() {
  // MXFP8 (32 per scale) and NVFP4 (16 per scale): whole atoms, ragged rows, K not a multiple of
  // four scale blocks, one row, several atoms in both directions
  const int shapes[][2] = {{128, 128}, {256, 512}, {200, 96}, {130, 160}, {1, 32}, {384, 256}, {64, 64}};
  for (const auto& s : shapes) {
    print_sf<32>(s[0], s[1]);
    print_sf<16>(s[0], s[1]);
  }
  using e4m3 = cutlass::float_e4m3_t;
  using e5m2 = cutlass::float_e5m2_t;
  using e2m1 = cutlass::float_e2m1_t;
  using ue8m0 = cutlass::float_ue8m0_t;
  using ue4m3 = cutlass::float_ue4m3_t;
  bs_over_n<e4m3, e4m3, ue8m0, 128>();
  bs_over_n<e4m3, e4m3, ue8m0, 256>();
  bs_over_n<e5m2, e4m3, ue8m0, 128>();
  bs_over_n<e4m3, e5m2, ue8m0, 256>();
  bs_over_n<e5m2, e5m2, ue8m0, 128>();
  bs_over_n<e2m1, e2m1, ue4m3, 128>();
  bs_over_n<e2m1, e2m1, ue4m3, 256>();
  bs_over_n<e2m1, e2m1, ue8m0, 128>();
  f8_over_n<e4m3, e4m3, 64>();
  f8_over_n<e4m3, e4m3, 128>();
  f8_over_n<e5m2, e4m3, 128>();
  f8_over_n<e5m2, e5m2, 256>();
  return 0;
}
