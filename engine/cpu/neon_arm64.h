// NEON instructions the Go assembler has no mnemonic for, as their
// encodings (Arm ARM, "Advanced SIMD" sections). Operands are register
// numbers in the Arm order, destination first: VFADD4S(3, 1, 2) is
// FADD V3.4S, V1.4S, V2.4S. `go tool objdump` decodes all of them but
// SDOT, which the tests check by its results.

// Floating point, four singles (three registers: d, n, m).
#define VFADD4S(d, n, m) WORD $(0x4E20D400 | ((m)<<16) | ((n)<<5) | (d))
#define VFSUB4S(d, n, m) WORD $(0x4EA0D400 | ((m)<<16) | ((n)<<5) | (d))
#define VFMUL4S(d, n, m) WORD $(0x6E20DC00 | ((m)<<16) | ((n)<<5) | (d))
#define VFDIV4S(d, n, m) WORD $(0x6E20FC00 | ((m)<<16) | ((n)<<5) | (d))
#define VFMAX4S(d, n, m) WORD $(0x4E20F400 | ((m)<<16) | ((n)<<5) | (d))
#define VFMIN4S(d, n, m) WORD $(0x4EA0F400 | ((m)<<16) | ((n)<<5) | (d))
// FADDP: d = [n0+n1, n2+n3, m0+m1, m2+m3]
#define VFADDP4S(d, n, m) WORD $(0x6E20D400 | ((m)<<16) | ((n)<<5) | (d))
#define VFCMGE4S(d, n, m) WORD $(0x6E20E400 | ((m)<<16) | ((n)<<5) | (d))
#define VFCMEQ4S(d, n, m) WORD $(0x4E20E400 | ((m)<<16) | ((n)<<5) | (d))

// Floating point, two doubles.
#define VFMUL2D(d, n, m) WORD $(0x6E60DC00 | ((m)<<16) | ((n)<<5) | (d))
#define VFSUB2D(d, n, m) WORD $(0x4EE0D400 | ((m)<<16) | ((n)<<5) | (d))

// Conversions (two registers: d, n). FCVTL widens the low half of n
// (four halves to singles, two singles to doubles), FCVTL2 the high half;
// FCVTN narrows two doubles into the low half of d, FCVTN2 into the high.
#define VFCVTL4S(d, n) WORD $(0x0E217800 | ((n)<<5) | (d))
#define VFCVTL24S(d, n) WORD $(0x4E217800 | ((n)<<5) | (d))
#define VFCVTL2D(d, n) WORD $(0x0E617800 | ((n)<<5) | (d))
#define VFCVTL22D(d, n) WORD $(0x4E617800 | ((n)<<5) | (d))
#define VFCVTN2S(d, n) WORD $(0x0E616800 | ((n)<<5) | (d))
#define VFCVTN24S(d, n) WORD $(0x4E616800 | ((n)<<5) | (d))
#define VSCVTF4S(d, n) WORD $(0x4E21D800 | ((n)<<5) | (d))
// FCVTNS: to int32, rounding to nearest, ties to even
#define VFCVTNS4S(d, n) WORD $(0x4E21A800 | ((n)<<5) | (d))
#define VFCVTZS4S(d, n) WORD $(0x4EA1B800 | ((n)<<5) | (d))
#define VFRINTN4S(d, n) WORD $(0x4E218800 | ((n)<<5) | (d))
#define VFABS4S(d, n) WORD $(0x4EA0F800 | ((n)<<5) | (d))
#define VFNEG4S(d, n) WORD $(0x6EA0F800 | ((n)<<5) | (d))

// Scalar results in lane 0: FADDP Sd, Vn.2S (n0+n1); FMAXV Sd, Vn.4S;
// SCVTF Sd, Sn (the int32 in lane 0 of n).
#define FADDP2S(d, n) WORD $(0x7E30D800 | ((n)<<5) | (d))
#define FMAXV4S(d, n) WORD $(0x6E30F800 | ((n)<<5) | (d))
#define SCVTFS(d, n) WORD $(0x5E21D800 | ((n)<<5) | (d))

// Integers. SDOT (ARMv8.2 DotProd): each int32 lane of d += the four
// products of the bytes of n and m in its lane.
#define VSDOT(d, n, m) WORD $(0x4E809400 | ((m)<<16) | ((n)<<5) | (d))
// SMULL/SMLAL: int16 d = (+=) the products of the low eight int8 of n and
// m; the 2 forms the high eight. The 4S forms: int32 from four int16.
#define VSMULL8H(d, n, m) WORD $(0x0E20C000 | ((m)<<16) | ((n)<<5) | (d))
#define VSMLAL28H(d, n, m) WORD $(0x4E208000 | ((m)<<16) | ((n)<<5) | (d))
#define VSMULL4S(d, n, m) WORD $(0x0E60C000 | ((m)<<16) | ((n)<<5) | (d))
#define VSMLAL24S(d, n, m) WORD $(0x4E608000 | ((m)<<16) | ((n)<<5) | (d))
// SADALP: int32 lane i of d += int16 lanes 2i and 2i+1 of n.
#define VSADALP4S(d, n) WORD $(0x4E606800 | ((n)<<5) | (d))
// ADDP: d = [n0+n1, n2+n3, m0+m1, m2+m3] (int32), or the same over eight int16.
#define VADDP4S(d, n, m) WORD $(0x4EA0BC00 | ((m)<<16) | ((n)<<5) | (d))
#define VADDP8H(d, n, m) WORD $(0x4E60BC00 | ((m)<<16) | ((n)<<5) | (d))
#define VMUL4S(d, n, m) WORD $(0x4EA09C00 | ((m)<<16) | ((n)<<5) | (d))
// ADDV Sd, Vn.4S: the sum of the four int32 lanes.
#define VADDV4S(d, n) WORD $(0x4EB1B800 | ((n)<<5) | (d))
// SADDLV Hd, Vn.16B: the sum of the sixteen int8 lanes, as int16.
#define VSADDLV16B(d, n) WORD $(0x4E303800 | ((n)<<5) | (d))
// SXTL (SSHLL #0): sign-extend the low (2: high) half to twice the width.
#define VSXTL8H(d, n) WORD $(0x0F08A400 | ((n)<<5) | (d))
#define VSXTL28H(d, n) WORD $(0x4F08A400 | ((n)<<5) | (d))
#define VSXTL4S(d, n) WORD $(0x0F10A400 | ((n)<<5) | (d))
#define VSXTL24S(d, n) WORD $(0x4F10A400 | ((n)<<5) | (d))
// SQXTN: narrow with signed saturation into the low half of d (2: the high).
#define VSQXTN4H(d, n) WORD $(0x0E614800 | ((n)<<5) | (d))
#define VSQXTN28H(d, n) WORD $(0x4E614800 | ((n)<<5) | (d))
#define VSQXTN8B(d, n) WORD $(0x0E214800 | ((n)<<5) | (d))
#define VSQXTN216B(d, n) WORD $(0x4E214800 | ((n)<<5) | (d))
// MLA: int32 d += n·m lane by lane; SMLAL .4S: int32 d += the products of
// the low four int16 of n and m.
#define VMLA4S(d, n, m) WORD $(0x4EA09400 | ((m)<<16) | ((n)<<5) | (d))
#define VSMLAL4S(d, n, m) WORD $(0x0E608000 | ((m)<<16) | ((n)<<5) | (d))
// AND, ORR, USHR and SHL on sixteen bytes, for operands given by number
// (the Go mnemonics take register names).
#define VAND16B(d, n, m) WORD $(0x4E201C00 | ((m)<<16) | ((n)<<5) | (d))
#define VORR16B(d, n, m) WORD $(0x4EA01C00 | ((m)<<16) | ((n)<<5) | (d))
#define VUSHR16B(d, n, s) WORD $(0x6F000400 | ((16-(s))<<16) | ((n)<<5) | (d))
#define VSHL16B(d, n, s) WORD $(0x4F005400 | ((8+(s))<<16) | ((n)<<5) | (d))
// FMLA and FMLS (fused: d ± n·m), MOV, ADD, SHL on four words and BIF (d
// takes n's bits where m's are 0) for operands given by number.
#define VFMLA4S(d, n, m) WORD $(0x4E20CC00 | ((m)<<16) | ((n)<<5) | (d))
#define VFMLS4S(d, n, m) WORD $(0x4EA0CC00 | ((m)<<16) | ((n)<<5) | (d))
#define VMOV16B(d, n) WORD $(0x4EA01C00 | ((n)<<16) | ((n)<<5) | (d))
#define VADD4S(d, n, m) WORD $(0x4EA08400 | ((m)<<16) | ((n)<<5) | (d))
#define VSHL4S(d, n, s) WORD $(0x4F005400 | ((32+(s))<<16) | ((n)<<5) | (d))
#define VBIF16B(d, n, m) WORD $(0x6EE01C00 | ((m)<<16) | ((n)<<5) | (d))
