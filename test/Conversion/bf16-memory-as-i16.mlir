// RUN: lamina-opt %s --lamina-bf16-memory-as-i16 | FileCheck %s

// arith-expand rounds f32 -> bf16 with integer ops and bitcasts the i16 result to
// vector<8xbf16> for the store (and bitcasts a loaded vector<8xbf16> to i16 before widening
// it). x86 without AVX-512 BF16 legalizes each bf16 lane of such a vector separately, so the
// step loads and stores the i16 vector instead: the bits are the same.

// CHECK-LABEL: llvm.func @round_and_store(
// CHECK-SAME:  %[[BITS:.*]]: vector<8xi16>, %[[P:.*]]: !llvm.ptr
// CHECK-NOT:   llvm.bitcast
// CHECK:       llvm.store %[[BITS]], %[[P]] {alignment = 2 : i64} : vector<8xi16>, !llvm.ptr
llvm.func @round_and_store(%bits: vector<8xi16>, %p: !llvm.ptr) {
  %b = llvm.bitcast %bits : vector<8xi16> to vector<8xbf16>
  llvm.store %b, %p {alignment = 2 : i64} : vector<8xbf16>, !llvm.ptr
  llvm.return
}

// CHECK-LABEL: llvm.func @load_and_widen(
// CHECK:       %[[V:.*]] = llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr -> vector<8xi16>
// CHECK-NOT:   llvm.bitcast
// CHECK:       llvm.zext %[[V]] : vector<8xi16> to vector<8xi32>
llvm.func @load_and_widen(%p: !llvm.ptr) -> vector<8xi32> {
  %v = llvm.load %p {alignment = 2 : i64} : !llvm.ptr -> vector<8xbf16>
  %i = llvm.bitcast %v : vector<8xbf16> to vector<8xi16>
  %w = llvm.zext %i : vector<8xi16> to vector<8xi32>
  llvm.return %w : vector<8xi32>
}

// A bf16 vector used as such (here: returned) keeps its type through a bitcast of the i16 load.
// CHECK-LABEL: llvm.func @load_other_use(
// CHECK:       %[[V:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<4xi16>
// CHECK:       %[[B:.*]] = llvm.bitcast %[[V]] : vector<4xi16> to vector<4xbf16>
// CHECK:       llvm.return %[[B]] : vector<4xbf16>
llvm.func @load_other_use(%p: !llvm.ptr) -> vector<4xbf16> {
  %v = llvm.load %p : !llvm.ptr -> vector<4xbf16>
  llvm.return %v : vector<4xbf16>
}

// A stored bf16 vector that no bitcast produced is bitcast to i16 for the store.
// CHECK-LABEL: llvm.func @store_argument(
// CHECK-SAME:  %[[X:.*]]: vector<4xbf16>
// CHECK:       %[[I:.*]] = llvm.bitcast %[[X]] : vector<4xbf16> to vector<4xi16>
// CHECK:       llvm.store %[[I]], %{{.*}} : vector<4xi16>, !llvm.ptr
llvm.func @store_argument(%x: vector<4xbf16>, %p: !llvm.ptr) {
  llvm.store %x, %p : vector<4xbf16>, !llvm.ptr
  llvm.return
}

// Other element types are left alone; a bf16 scalar used as such is the i16 load bitcast.
// CHECK-LABEL: llvm.func @untouched(
// CHECK:       %[[S:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i16
// CHECK:       %[[B:.*]] = llvm.bitcast %[[S]] : i16 to bf16
// CHECK:       llvm.store %{{.*}}, %{{.*}} : vector<8xf16>, !llvm.ptr
// CHECK:       llvm.return %[[B]] : bf16
llvm.func @untouched(%p: !llvm.ptr, %h: vector<8xf16>) -> bf16 {
  %s = llvm.load %p : !llvm.ptr -> bf16
  llvm.store %h, %p : vector<8xf16>, !llvm.ptr
  llvm.return %s : bf16
}

// A masked load's pass-through value is bitcast to i16 along with the result.
// CHECK-LABEL: llvm.func @masked_load(
// CHECK:       %[[PASS:.*]] = llvm.bitcast %{{.*}} : vector<8xbf16> to vector<8xi16>
// CHECK:       %[[V:.*]] = llvm.intr.masked.load %{{.*}}, %{{.*}}, %[[PASS]] {alignment = 2 : i32} : (!llvm.ptr, vector<8xi1>, vector<8xi16>) -> vector<8xi16>
// CHECK:       llvm.zext %[[V]]
llvm.func @masked_load(%p: !llvm.ptr, %mask: vector<8xi1>) -> vector<8xi32> {
  %pass = llvm.mlir.poison : vector<8xbf16>
  %v = llvm.intr.masked.load %p, %mask, %pass {alignment = 2 : i32} : (!llvm.ptr, vector<8xi1>, vector<8xbf16>) -> vector<8xbf16>
  %i = llvm.bitcast %v : vector<8xbf16> to vector<8xi16>
  %w = llvm.zext %i : vector<8xi16> to vector<8xi32>
  llvm.return %w : vector<8xi32>
}

// Scalars too: a kernel's copy and fill loops of bf16 (LLVM's vectorizers made bf16 vectors of
// them that x86's instruction selection could not legalize: a bf16 convolution's backward
// aborted its compile worker). The copy moves i16; the fill stores the constant's bits.
// CHECK-LABEL: llvm.func @copy_and_fill(
// CHECK:       %[[V:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i16
// CHECK:       llvm.store %[[V]], %{{.*}} : i16, !llvm.ptr
// CHECK:       %[[Z:.*]] = llvm.bitcast %{{.*}} : bf16 to i16
// CHECK:       llvm.store %[[Z]], %{{.*}} : i16, !llvm.ptr
// CHECK-NOT:   : bf16, !llvm.ptr
llvm.func @copy_and_fill(%src: !llvm.ptr, %dst: !llvm.ptr) {
  %v = llvm.load %src : !llvm.ptr -> bf16
  llvm.store %v, %dst : bf16, !llvm.ptr
  %z = llvm.mlir.constant(0.000000e+00 : bf16) : bf16
  llvm.store %z, %dst : bf16, !llvm.ptr
  llvm.return
}
