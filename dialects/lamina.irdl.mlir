// The lamina tensor dialect: the single source of truth for op names, operands,
// results and attributes. Loaded at import (lamina.dialect.load); Python builders
// are derived from this file. Shape/dtype rules IRDL cannot state live in
// python/lamina/dialect/infer.py, one rule per op.
//
// Every operand and result has its own constraint variable: IRDL unifies uses of one
// variable, so sharing it would force equal types. Ops print in generic form.
irdl.dialect @lamina {
  // ---- Elementwise, unary: result has the operand's shape (and dtype, but for logical_not -> i1).
  // neg(input), elementwise
  irdl.operation @neg {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // abs(input), elementwise
  irdl.operation @abs {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // exp(input), elementwise
  irdl.operation @exp {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // log(input), elementwise
  irdl.operation @log {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // log1p(input), elementwise
  irdl.operation @log1p {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // expm1(input), elementwise
  irdl.operation @expm1 {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // tan(input), elementwise (floats; integers promote)
  irdl.operation @tan {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // atan(input), elementwise (floats; integers promote)
  irdl.operation @atan {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // asin(input), elementwise (floats; integers promote)
  irdl.operation @asin {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // acos(input), elementwise (floats; integers promote)
  irdl.operation @acos {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // sinh(input), elementwise (floats; integers promote)
  irdl.operation @sinh {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // cosh(input), elementwise (floats; integers promote)
  irdl.operation @cosh {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // asinh(input), elementwise (floats; integers promote)
  irdl.operation @asinh {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // acosh(input), elementwise (floats; integers promote)
  irdl.operation @acosh {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // atanh(input), elementwise (floats; integers promote)
  irdl.operation @atanh {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // exp2(input), elementwise (floats; integers promote)
  irdl.operation @exp2 {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // log2(input), elementwise (floats; integers promote)
  irdl.operation @log2 {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // log10(input), elementwise (floats; integers promote)
  irdl.operation @log10 {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // sin(input), elementwise
  irdl.operation @sin {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // cos(input), elementwise
  irdl.operation @cos {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // tanh(input), elementwise
  irdl.operation @tanh {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // sigmoid(input), elementwise
  irdl.operation @sigmoid {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // relu(input), elementwise
  irdl.operation @relu {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // erf(input), elementwise
  irdl.operation @erf {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // sqrt(input), elementwise
  irdl.operation @sqrt {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // rsqrt(input), elementwise
  irdl.operation @rsqrt {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // reciprocal(input), elementwise
  irdl.operation @reciprocal {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // floor(input), elementwise
  irdl.operation @floor {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // ceil(input), elementwise
  irdl.operation @ceil {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // round(input): to the nearest integer, halves to even (torch.round), elementwise
  irdl.operation @round {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // logical_not(input), elementwise
  irdl.operation @logical_not {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // gelu(input); approximate = "none" (erf form) | "tanh"
  irdl.operation @gelu {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %approximate_attr = irdl.base "#builtin.string"
    irdl.attributes { "approximate" = %approximate_attr }
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // ---- Elementwise, binary: numpy broadcasting, torch type promotion (rank-0 operands only promote across categories).
  // add(lhs, rhs), elementwise with broadcasting
  irdl.operation @add {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // sub(lhs, rhs), elementwise with broadcasting
  irdl.operation @sub {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // mul(lhs, rhs), elementwise with broadcasting
  irdl.operation @mul {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // div(lhs, rhs), elementwise with broadcasting
  irdl.operation @div {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // pow(lhs, rhs), elementwise with broadcasting
  irdl.operation @pow {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // maximum(lhs, rhs), elementwise with broadcasting
  irdl.operation @maximum {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // minimum(lhs, rhs), elementwise with broadcasting
  irdl.operation @minimum {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // eq(lhs, rhs), elementwise with broadcasting
  irdl.operation @eq {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // ne(lhs, rhs), elementwise with broadcasting
  irdl.operation @ne {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // lt(lhs, rhs), elementwise with broadcasting
  irdl.operation @lt {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // le(lhs, rhs), elementwise with broadcasting
  irdl.operation @le {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // gt(lhs, rhs), elementwise with broadcasting
  irdl.operation @gt {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // ge(lhs, rhs), elementwise with broadcasting
  irdl.operation @ge {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // logical_and(lhs, rhs), elementwise with broadcasting
  irdl.operation @logical_and {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // logical_or(lhs, rhs), elementwise with broadcasting
  irdl.operation @logical_or {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // logical_xor(lhs, rhs), elementwise with broadcasting
  irdl.operation @logical_xor {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // bitwise_and(lhs, rhs): integers and bools, elementwise with broadcasting (promoted type)
  irdl.operation @bitwise_and {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // bitwise_or(lhs, rhs): integers and bools, elementwise with broadcasting (promoted type)
  irdl.operation @bitwise_or {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // bitwise_xor(lhs, rhs): integers and bools, elementwise with broadcasting (promoted type)
  irdl.operation @bitwise_xor {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // bitwise_left_shift / bitwise_right_shift(lhs, rhs): integers, torch's rules for shift
  // amounts outside [0, bits): a left shift gives 0, a right shift fills with the sign
  irdl.operation @bitwise_left_shift {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  irdl.operation @bitwise_right_shift {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // fmod(lhs, rhs): C's fmod, the remainder of the division truncated toward zero (sign of lhs);
  // integers and floats in the promoted type; an integer division by zero does not trap
  // (torch raises; lamina gives 0 there, unchecked)
  irdl.operation @fmod {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // remainder(lhs, rhs): Python's modulo, the remainder of the floored division (sign of rhs);
  // integers and floats in the promoted type; an integer division by zero does not trap
  // (torch raises; lamina gives 0 there, unchecked)
  irdl.operation @remainder {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // div_trunc(lhs, rhs): the quotient rounded toward zero (torch.div(rounding_mode='trunc'));
  // integers and floats in the promoted type; an integer division by zero does not trap
  // (torch raises; lamina gives 0 there, unchecked)
  irdl.operation @div_trunc {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // div_floor(lhs, rhs): the quotient rounded down (torch.div(rounding_mode='floor'), //);
  // integers and floats in the promoted type; an integer division by zero does not trap
  // (torch raises; lamina gives 0 there, unchecked)
  irdl.operation @div_floor {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // bitwise_not(input): every bit flipped (integers; bools: logical not)
  irdl.operation @bitwise_not {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // where(condition, lhs, rhs): condition ? lhs : rhs, broadcast over all three
  irdl.operation @where {
    %condition = irdl.base "!builtin.tensor"
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(condition: %condition, lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // cast(input) to the result's element type (torch conversion semantics)
  irdl.operation @cast {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // bitcast(input) to the result's element type of the same bit width: the same bits read as
  // another type (float <-> integer), as torch's Tensor.view(dtype)
  irdl.operation @bitcast {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // ---- Sources.
  // a constant tensor (scalars are rank-0, full() is a splat)
  irdl.operation @constant {
    %result = irdl.base "!builtin.tensor"
    %value_attr = irdl.base "#builtin.dense_int_or_fp_elements"
    irdl.attributes { "value" = %value_attr }
    irdl.results(result: %result)
  }
  // iota: a rank-1 tensor [0, 1, ..., N-1] of the result's element type
  irdl.operation @iota {
    %result = irdl.base "!builtin.tensor"
    irdl.results(result: %result)
  }
  // random_uniform(seed): uniform floats in [0, 1) of the result's shape and (float) element
  // type: element i is Philox4x32-10 of the counter offset + i (row-major) under the key
  // `seed` (a rank-0 i64 tensor), its top 24 bits scaled by 2^-24
  irdl.operation @random_uniform {
    %seed = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %offset_attr = irdl.base "#builtin.integer"
    irdl.attributes { "offset" = %offset_attr }
    irdl.operands(seed: %seed)
    irdl.results(result: %result)
  }
  // size(n): a symbolic size (an index value) as a rank-0 i64 tensor, where a size is
  // used as a value (x / math.sqrt(x.shape[-1]) under dynamic shapes)
  irdl.operation @size {
    %size = irdl.is index
    %result = irdl.base "!builtin.tensor"
    irdl.operands(size: %size)
    irdl.results(result: %result)
  }
  // ---- Reductions over `dims` (sorted, non-negative); keepdim keeps them as size 1.
  // reduce_sum(input) over dims
  irdl.operation @reduce_sum {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dims_attr = irdl.base "#builtin.dense_array"
    %keepdim_attr = irdl.base "#builtin.integer"
    irdl.attributes { "dims" = %dims_attr, "keepdim" = %keepdim_attr }
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // reduce_mean(input) over dims
  irdl.operation @reduce_mean {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dims_attr = irdl.base "#builtin.dense_array"
    %keepdim_attr = irdl.base "#builtin.integer"
    irdl.attributes { "dims" = %dims_attr, "keepdim" = %keepdim_attr }
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // reduce_max(input) over dims
  irdl.operation @reduce_max {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dims_attr = irdl.base "#builtin.dense_array"
    %keepdim_attr = irdl.base "#builtin.integer"
    irdl.attributes { "dims" = %dims_attr, "keepdim" = %keepdim_attr }
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // reduce_min(input) over dims
  irdl.operation @reduce_min {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dims_attr = irdl.base "#builtin.dense_array"
    %keepdim_attr = irdl.base "#builtin.integer"
    irdl.attributes { "dims" = %dims_attr, "keepdim" = %keepdim_attr }
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // reduce_prod(input) over dims
  irdl.operation @reduce_prod {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dims_attr = irdl.base "#builtin.dense_array"
    %keepdim_attr = irdl.base "#builtin.integer"
    irdl.attributes { "dims" = %dims_attr, "keepdim" = %keepdim_attr }
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // variance over dims with Bessel-style `correction` (0 = population)
  irdl.operation @var {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dims_attr = irdl.base "#builtin.dense_array"
    %keepdim_attr = irdl.base "#builtin.integer"
    %correction_attr = irdl.base "#builtin.float"
    irdl.attributes { "dims" = %dims_attr, "keepdim" = %keepdim_attr, "correction" = %correction_attr }
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // ---- Contraction.
  // matmul(lhs, rhs): [..., M, K] x [..., K, N] -> [..., M, N], batch dims broadcast; both rank >= 2
  irdl.operation @matmul {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // convolution(input, weight): input [N, C, *S], weight [F, C/groups, *K] -> [N, F, *O] with
  // 1-3 spatial dims, O = (S + pad_lo + pad_hi - dilation * (K - 1) - 1) / stride + 1 (zero
  // padding; padding = pad_lo per spatial dim, then pad_hi per dim). Cross-correlation, as
  // torch's; the bias and a transposed convolution are built around it by the importer.
  irdl.operation @convolution {
    %input = irdl.base "!builtin.tensor"
    %weight = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %stride_attr = irdl.base "#builtin.dense_array"
    %padding_attr = irdl.base "#builtin.dense_array"
    %dilation_attr = irdl.base "#builtin.dense_array"
    %groups_attr = irdl.base "#builtin.integer"
    irdl.attributes { "stride" = %stride_attr, "padding" = %padding_attr, "dilation" = %dilation_attr, "groups" = %groups_attr }
    irdl.operands(input: %input, weight: %weight)
    irdl.results(result: %result)
  }
  // ---- Data movement (value semantics: no aliasing at this level).
  // reshape(input) to the result type's shape (same number of elements)
  irdl.operation @reshape {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // broadcast_to(input): numpy broadcasting to the result type's shape
  irdl.operation @broadcast_to {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // transpose(input): result dim i = input dim perm[i]
  irdl.operation @transpose {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %perm_attr = irdl.base "#builtin.dense_array"
    irdl.attributes { "perm" = %perm_attr }
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // slice(input) along dim: start, end (exclusive, clamped), step > 0; a bound is an integer, or a symbolic expression string (torch's syntax, as in types) in [0, size] (IRDL's loader takes no any_of of attribute bases, and one irdl.any binds one value: the shape rule checks the kind)
  irdl.operation @slice {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dim_attr = irdl.base "#builtin.integer"
    %start_attr = irdl.any
    %end_attr = irdl.any
    %step_attr = irdl.base "#builtin.integer"
    irdl.attributes { "dim" = %dim_attr, "start" = %start_attr, "end" = %end_attr, "step" = %step_attr }
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // concat(lhs, rhs) along dim (binary: IRDL variadics must share one type)
  irdl.operation @concat {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dim_attr = irdl.base "#builtin.integer"
    irdl.attributes { "dim" = %dim_attr }
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(result: %result)
  }
  // index_select(input, index): result = input with `dim` replaced by index's shape (embedding)
  irdl.operation @index_select {
    %input = irdl.base "!builtin.tensor"
    %index = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dim_attr = irdl.base "#builtin.integer"
    irdl.attributes { "dim" = %dim_attr }
    irdl.operands(input: %input, index: %index)
    irdl.results(result: %result)
  }
  // scatter(dest, index, updates) {reduce}: dest (1-D) with dest[index[i]] replaced by
  // updates[i] (reduce "none") or combined with it ("add", "mul", "max", "min"), i in order
  // (index and updates 1-D of one length; index in [0, len(dest)): the importer wraps and
  // clamps it). The family's primitive: index_put, scatter, scatter_reduce
  irdl.operation @scatter {
    %dest = irdl.base "!builtin.tensor"
    %index = irdl.base "!builtin.tensor"
    %updates = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %reduce_attr = irdl.base "#builtin.string"
    irdl.attributes { "reduce" = %reduce_attr }
    irdl.operands(dest: %dest, index: %index, updates: %updates)
    irdl.results(result: %result)
  }
  // argsort(input) {dim, descending}: int64 positions along `dim` that sort input there
  // stably (NaN after every number ascending, first descending; ties keep input order):
  // sort, topk, kthvalue and median gather by it
  irdl.operation @argsort {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dim_attr = irdl.base "#builtin.integer"
    %descending_attr = irdl.base "#builtin.integer"
    irdl.attributes { "dim" = %dim_attr, "descending" = %descending_attr }
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // airy_ai(input): the Airy function Ai of a float tensor (torch.special.airy_ai; its
  // Maclaurin series a loop per element), elementwise
  irdl.operation @airy_ai {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // gcd(a, b): greatest common divisor of integers, elementwise with broadcasting (torch's
  // calc_gcd: Euclid's loop on |a|, |b|, so gcd(0, 0) = 0), a and b of one integer type
  irdl.operation @gcd {
    %a = irdl.base "!builtin.tensor"
    %b = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    irdl.operands(a: %a, b: %b)
    irdl.results(result: %result)
  }
  // orthogonal_polynomial(x, n) {kind}: torch's special.<kind>_polynomial of degree
  // trunc(n) (kind: chebyshev_t/u/v/w, shifted_chebyshev_t/u/v/w, hermite_h, hermite_he,
  // laguerre_l, legendre_p), elementwise with broadcasting, x and n of one float type: the
  // three-term recurrence as a loop per element, whose trip count is the element's n
  irdl.operation @orthogonal_polynomial {
    %x = irdl.base "!builtin.tensor"
    %n = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kind_attr = irdl.base "#builtin.string"
    irdl.attributes { "kind" = %kind_attr }
    irdl.operands(x: %x, n: %n)
    irdl.results(result: %result)
  }
  // igamma_series(a, v, active) {kind}: one of the sums the regularized incomplete gamma
  // functions are made of (torch.igamma / igammac; ATen's calc_igamma, after SciPy), elementwise
  // with broadcasting, a, v of one float type, active i1: kind lower_series (v = x: DLMF 8.11.4's
  // power series 1 + x/(a+1) + ...), upper_series (v = x: the sum of (-x)^n / (n! (a + n)),
  // n >= 1, DLMF 8.7.3), continued_fraction (v = x: DLMF 8.9.2's fraction), each a loop per
  // element until its term is below the type's epsilon (at most 2000 steps), or asymptotic
  // (v = eta: Temme's sum over k of c_k(eta) / a^k, DLMF 8.12.3, while its terms shrink).
  // Where active is false the loop runs no step and the result is unspecified.
  irdl.operation @igamma_series {
    %a = irdl.base "!builtin.tensor"
    %v = irdl.base "!builtin.tensor"
    %active = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %kind_attr = irdl.base "#builtin.string"
    irdl.attributes { "kind" = %kind_attr }
    irdl.operands(a: %a, v: %v, active: %active)
    irdl.results(result: %result)
  }
  // ---- Library calls: one result of a dense linear-algebra routine (LAPACK / cuSOLVER
  // through torch's own operator `callee`, e.g. "aten._linalg_svd.default"), called on the
  // kernel's buffers (codegen/library_calls.py). `arguments`: the call's arguments as a JSON
  // object (schema name -> value, tensors as {"operand": i}); `result` picks the callee's
  // output. The callees are a fixed list (dialect/library_callees.py). IRDL unifies a
  // variadic's types, so the number of tensor operands is in the name.
  // library_call1(a) {callee, arguments, result}
  irdl.operation @library_call1 {
    %a = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %callee_attr = irdl.base "#builtin.string"
    %arguments_attr = irdl.base "#builtin.string"
    %result_attr = irdl.base "#builtin.integer"
    irdl.attributes { "callee" = %callee_attr, "arguments" = %arguments_attr, "result" = %result_attr }
    irdl.operands(a: %a)
    irdl.results(result: %result)
  }
  // library_call2(a, b) {callee, arguments, result}
  irdl.operation @library_call2 {
    %a = irdl.base "!builtin.tensor"
    %b = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %callee_attr = irdl.base "#builtin.string"
    %arguments_attr = irdl.base "#builtin.string"
    %result_attr = irdl.base "#builtin.integer"
    irdl.attributes { "callee" = %callee_attr, "arguments" = %arguments_attr, "result" = %result_attr }
    irdl.operands(a: %a, b: %b)
    irdl.results(result: %result)
  }
  // library_call3(a, b, c) {callee, arguments, result}
  irdl.operation @library_call3 {
    %a = irdl.base "!builtin.tensor"
    %b = irdl.base "!builtin.tensor"
    %c = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %callee_attr = irdl.base "#builtin.string"
    %arguments_attr = irdl.base "#builtin.string"
    %result_attr = irdl.base "#builtin.integer"
    irdl.attributes { "callee" = %callee_attr, "arguments" = %arguments_attr, "result" = %result_attr }
    irdl.operands(a: %a, b: %b, c: %c)
    irdl.results(result: %result)
  }
  // ---- Composite ops, decomposed by lamina-decompose before lowering.
  // softmax(input) along dim
  irdl.operation @softmax {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dim_attr = irdl.base "#builtin.integer"
    irdl.attributes { "dim" = %dim_attr }
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
  // log_softmax(input) along dim
  irdl.operation @log_softmax {
    %input = irdl.base "!builtin.tensor"
    %result = irdl.base "!builtin.tensor"
    %dim_attr = irdl.base "#builtin.integer"
    irdl.attributes { "dim" = %dim_attr }
    irdl.operands(input: %input)
    irdl.results(result: %result)
  }
}
