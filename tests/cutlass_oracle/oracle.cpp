// Host-only oracle for tests/test_layouts_cutlass.py: prints the bit layouts that CUTLASS/CuTe
// compute, so the Python encoders in gemm_kernels/layouts.py can be compared with an independent
// implementation. Nothing here is copied into the package; it only calls CuTe's public headers.
//
// Output, one record per line (numbers in decimal unless prefixed 0x):
//   IDESC <M> <N> <ab f16|bf16> <acc f16|f32> <a_major K|MN> <b_major K|MN> 0x<idesc>
//   SMEM  <addr> <lbo> <sbo> <layout code> <base offset> 0x<desc>
//   UMMA  <swizzle name> <rows> <cols> 0x<desc>          (make_umma_desc of a K-major fp16 tile)
//   SWZ   <B> <first offset> <count> <v0> <v1> ...        (cute::Swizzle<B,4,3> of consecutive offsets)
//   TILE  <rows> <cols> <o(0,0)> <o(0,1)> ...             (byte offset of fp16 (r,c), row-major order)
#include <cstdint>
#include <cstdio>
#include <utility>

#include <cute/tensor.hpp>
#include <cute/swizzle.hpp>
#include <cute/arch/mma_sm100_desc.hpp>
#include <cute/atom/mma_traits_sm100.hpp>

using namespace cute;

namespace {

const char* major_name(UMMA::Major m) { return m == UMMA::Major::K ? "K" : "MN"; }

template <class T> const char* type_name();
template <> const char* type_name<half_t>() { return "f16"; }
template <> const char* type_name<bfloat16_t>() { return "bf16"; }
template <> const char* type_name<float>() { return "f32"; }

template <class AB, class C, int M, int N, UMMA::Major AM, UMMA::Major BM>
void print_idesc() {
  const UMMA::InstrDescriptor d = UMMA::make_instr_desc<AB, AB, C, M, N, AM, BM>();
  std::printf("IDESC %d %d %s %s %s %s 0x%08x\n", M, N, type_name<AB>(), type_name<C>(),
              major_name(AM), major_name(BM), static_cast<unsigned>(static_cast<uint32_t>(d)));
}

template <class AB, class C, int M, UMMA::Major AM, UMMA::Major BM, int... Ns>
void idesc_over_n(std::integer_sequence<int, Ns...>) {
  (print_idesc<AB, C, M, 8 * (Ns + 1), AM, BM>(), ...);  // N = 8, 16, ..., 256
}

template <class AB, class C, UMMA::Major AM, UMMA::Major BM>
void idesc_over_mn() {
  using Ns = std::make_integer_sequence<int, 32>;
  idesc_over_n<AB, C, 64, AM, BM>(Ns{});
  idesc_over_n<AB, C, 128, AM, BM>(Ns{});
  idesc_over_n<AB, C, 256, AM, BM>(Ns{});
}

template <class AB, class C>
void idesc_over_majors() {
  idesc_over_mn<AB, C, UMMA::Major::K, UMMA::Major::K>();
  idesc_over_mn<AB, C, UMMA::Major::K, UMMA::Major::MN>();
  idesc_over_mn<AB, C, UMMA::Major::MN, UMMA::Major::K>();
  idesc_over_mn<AB, C, UMMA::Major::MN, UMMA::Major::MN>();
}

void print_smem(uint32_t addr, uint32_t lbo, uint32_t sbo, UMMA::LayoutType layout, uint32_t base) {
  // Fill CuTe's bit-field union field by field; the 14-bit start field truncates addr >> 4
  // exactly as the hardware sees a shared address (rank bits above the window drop out).
  UMMA::SmemDescriptor d;
  d.start_address_ = static_cast<uint16_t>(addr >> 4);
  d.leading_byte_offset_ = static_cast<uint16_t>(lbo >> 4);
  d.stride_byte_offset_ = static_cast<uint16_t>(sbo >> 4);
  d.version_ = 1;
  d.base_offset_ = static_cast<uint8_t>(base);
  d.lbo_mode_ = 0;
  d.layout_type_ = static_cast<uint8_t>(layout);
  const uint64_t v = d;
  std::printf("SMEM %u %u %u %u %u 0x%016llx\n", addr, lbo, sbo, static_cast<unsigned>(layout), base,
              static_cast<unsigned long long>(v));
}

template <class Atom>
void print_umma(const char* name, Atom atom) {
  // A 128-row K-major fp16 tile made of the given swizzle atom; CuTe derives LBO/SBO/layout type.
  auto layout = tile_to_shape(atom, Shape<_128, decltype(size<1>(atom))>{});
  half_t* p = nullptr;
  Tensor t = make_tensor(make_smem_ptr(p), layout);
  const UMMA::SmemDescriptor d = UMMA::make_umma_desc<UMMA::Major::K>(t);
  const uint64_t v = d;
  std::printf("UMMA %s %d %d 0x%016llx\n", name, 128, int(size<1>(atom)), static_cast<unsigned long long>(v));
}

template <int B>
void print_swizzle(int count) {
  Swizzle<B, 4, 3> sw;
  std::printf("SWZ %d 0 %d", B, count);
  for (int i = 0; i < count; ++i) std::printf(" %d", int(sw(i)));
  std::printf("\n");
}

alignas(1024) half_t tile_buffer[128 * 64];

void print_tile() {
  // fp16 128 x 64 K-major tile of 128B-swizzle atoms over a 1024-aligned buffer. CuTe applies the
  // swizzle to the byte address held by the smem pointer, so the byte offset of element (r, c) is
  // the distance of its swizzled address from the buffer.
  auto layout = tile_to_shape(UMMA::Layout_K_SW128_Atom<half_t>{}, Shape<_128, _64>{});
  Tensor t = make_tensor(make_smem_ptr(tile_buffer), layout);
  const char* base = reinterpret_cast<const char*>(tile_buffer);
  std::printf("TILE 128 64");
  for (int r = 0; r < 128; ++r)
    for (int c = 0; c < 64; ++c)
      std::printf(" %ld", static_cast<long>(reinterpret_cast<const char*>(raw_pointer_cast(&t(r, c))) - base));
  std::printf("\n");
}

}  // namespace

int main() {
  idesc_over_majors<half_t, float>();
  idesc_over_majors<half_t, half_t>();
  idesc_over_majors<bfloat16_t, float>();
  idesc_over_majors<bfloat16_t, half_t>();

  const uint32_t addrs[] = {0u, 0x10u, 0x400u, 0x420u, 0x440u, 0x460u, 0x800u, 0x1230u, 0x3FFF0u,
                            0x2A400u, 0x1000400u, 0x3008000u};
  const uint32_t sizes[] = {0u, 16u, 128u, 1024u, 2048u, 0x3FFF0u};
  const UMMA::LayoutType layouts[] = {UMMA::LayoutType::SWIZZLE_NONE, UMMA::LayoutType::SWIZZLE_128B_BASE32B,
                                      UMMA::LayoutType::SWIZZLE_128B, UMMA::LayoutType::SWIZZLE_64B,
                                      UMMA::LayoutType::SWIZZLE_32B};
  for (uint32_t a : addrs)
    for (uint32_t lbo : sizes)
      for (uint32_t sbo : sizes)
        for (UMMA::LayoutType l : layouts)
          for (uint32_t base : {0u, 1u, 7u}) print_smem(a, lbo, sbo, l, base);

  print_umma("128B", UMMA::Layout_K_SW128_Atom<half_t>{});
  print_umma("64B", UMMA::Layout_K_SW64_Atom<half_t>{});
  print_umma("32B", UMMA::Layout_K_SW32_Atom<half_t>{});

  print_swizzle<0>(1 << 14);
  print_swizzle<1>(1 << 14);
  print_swizzle<2>(1 << 14);
  print_swizzle<3>(1 << 14);
  print_tile();
  return 0;
}
