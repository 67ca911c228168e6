package gguf

import (
	"fmt"
	"math"
)

// ValueType is the type tag of a metadata value.
type ValueType uint32

// Metadata value types, as numbered by the GGUF specification.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("valuetype(%d)", uint32(t))
}

// fixedSize is the encoded size of a scalar type, 0 for string/array, -1 when unknown.
func (t ValueType) fixedSize() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	case TypeString, TypeArray:
		return 0
	}
	return -1
}

// Value is one metadata value. V holds the Go value matching Type:
// uint8, int8, uint16, int16, uint32, int32, float32, bool, string,
// uint64, int64, float64, or an Array.
type Value struct {
	Type ValueType
	V    any
}

// Array is a metadata array. Data is a slice of the element's Go type
// ([]uint8 … []float64, []bool, []string), or []Array for nested arrays.
type Array struct {
	Elem ValueType
	Data any
}

// Len is the number of elements.
func (a Array) Len() int {
	switch d := a.Data.(type) {
	case []uint8:
		return len(d)
	case []int8:
		return len(d)
	case []uint16:
		return len(d)
	case []int16:
		return len(d)
	case []uint32:
		return len(d)
	case []int32:
		return len(d)
	case []float32:
		return len(d)
	case []bool:
		return len(d)
	case []string:
		return len(d)
	case []uint64:
		return len(d)
	case []int64:
		return len(d)
	case []float64:
		return len(d)
	case []Array:
		return len(d)
	}
	return 0
}

// ValueOf wraps a Go value as a metadata Value. It accepts the scalar
// types listed on Value, string, the slice types listed on Array, and Array.
func ValueOf(v any) (Value, error) {
	switch x := v.(type) {
	case uint8:
		return Value{TypeUint8, x}, nil
	case int8:
		return Value{TypeInt8, x}, nil
	case uint16:
		return Value{TypeUint16, x}, nil
	case int16:
		return Value{TypeInt16, x}, nil
	case uint32:
		return Value{TypeUint32, x}, nil
	case int32:
		return Value{TypeInt32, x}, nil
	case float32:
		return Value{TypeFloat32, x}, nil
	case bool:
		return Value{TypeBool, x}, nil
	case string:
		return Value{TypeString, x}, nil
	case uint64:
		return Value{TypeUint64, x}, nil
	case int64:
		return Value{TypeInt64, x}, nil
	case float64:
		return Value{TypeFloat64, x}, nil
	case Array:
		return Value{TypeArray, x}, nil
	}
	a, ok := arrayOf(v)
	if !ok {
		return Value{}, fmt.Errorf("gguf: cannot store a %T as metadata", v)
	}
	return Value{TypeArray, a}, nil
}

func arrayOf(v any) (Array, bool) {
	switch v.(type) {
	case []uint8:
		return Array{TypeUint8, v}, true
	case []int8:
		return Array{TypeInt8, v}, true
	case []uint16:
		return Array{TypeUint16, v}, true
	case []int16:
		return Array{TypeInt16, v}, true
	case []uint32:
		return Array{TypeUint32, v}, true
	case []int32:
		return Array{TypeInt32, v}, true
	case []float32:
		return Array{TypeFloat32, v}, true
	case []bool:
		return Array{TypeBool, v}, true
	case []string:
		return Array{TypeString, v}, true
	case []uint64:
		return Array{TypeUint64, v}, true
	case []int64:
		return Array{TypeInt64, v}, true
	case []float64:
		return Array{TypeFloat64, v}, true
	case []Array:
		return Array{TypeArray, v}, true
	}
	return Array{}, false
}

// Uint reads an unsigned or non-negative signed integer of any width.
func (v Value) Uint() (uint64, bool) {
	switch x := v.V.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case int8:
		return uint64(x), x >= 0
	case int16:
		return uint64(x), x >= 0
	case int32:
		return uint64(x), x >= 0
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}

// Float reads a float32 or float64 value.
func (v Value) Float() (float64, bool) {
	switch x := v.V.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// String renders the value for people: scalars as Go prints them, strings
// quoted, arrays as their type and length with the first few elements.
func (v Value) String() string {
	switch x := v.V.(type) {
	case string:
		if len(x) > 60 {
			return fmt.Sprintf("%q…(%d bytes)", x[:60], len(x))
		}
		return fmt.Sprintf("%q", x)
	case Array:
		return fmt.Sprintf("[%d × %s]", x.Len(), x.Elem)
	case float32:
		if math.IsInf(float64(x), 0) || x != x {
			return fmt.Sprint(x)
		}
	}
	return fmt.Sprint(v.V)
}
