// The float dot product's and axpy's steps, shared by dotAVX2 and axpyAVX2
// and by the attention kernels, which must sum each element exactly as
// they do.

// DOT_ZERO clears the four sums Y0–Y3.
#define DOT_ZERO \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3

// DOT32 adds 32 products of A and B into Y0–Y3 and moves A and B on
// (Y4–Y7: scratch).
#define DOT32(A, B) \
	VMOVUPS (A), Y4 \
	VMOVUPS 32(A), Y5 \
	VMOVUPS 64(A), Y6 \
	VMOVUPS 96(A), Y7 \
	VFMADD231PS (B), Y4, Y0 \
	VFMADD231PS 32(B), Y5, Y1 \
	VFMADD231PS 64(B), Y6, Y2 \
	VFMADD231PS 96(B), Y7, Y3 \
	ADDQ $128, A \
	ADDQ $128, B

// DOT8 adds 8 products of A and B into Y0 and moves A and B on.
#define DOT8(A, B) \
	VMOVUPS (A), Y4 \
	VFMADD231PS (B), Y4, Y0 \
	ADDQ $32, A \
	ADDQ $32, B

// DOT_REDUCE adds the four sums' lanes into X0's first.
#define DOT_REDUCE \
	VADDPS Y1, Y0, Y0 \
	VADDPS Y3, Y2, Y2 \
	VADDPS Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VHADDPS X0, X0, X0 \
	VHADDPS X0, X0, X0

// AXPY8 adds W (eight copies of a) times the 8 values at S to the 8 at D
// and moves D and S on (Y1: scratch).
#define AXPY8(D, S, W) \
	VMOVUPS (D), Y1 \
	VFMADD231PS (S), W, Y1 \
	VMOVUPS Y1, (D) \
	ADDQ $32, D \
	ADDQ $32, S
