package classroom

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// CodeAlphabet has no 0/O or 1/I: codes are read off a projector.
const CodeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// CodeLen characters give 32^6 ≈ 1.07e9 codes; with JoinFailures guesses
// a minute per client, finding one of 100 live rooms takes ~10^5 minutes.
const CodeLen = 6

func newCode() string {
	var b [CodeLen]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = CodeAlphabet[int(b[i])%len(CodeAlphabet)] // 256 is a multiple of 32: no bias
	}
	return string(b[:])
}

// NormalizeCode upper-cases a typed code and checks its form.
func NormalizeCode(s string) (string, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if len(s) != CodeLen {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(CodeAlphabet, s[i]) < 0 {
			return "", false
		}
	}
	return s, true
}

func newSecret() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func hashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// ValidStudent checks a student id's form (32 hex digits).
func ValidStudent(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// NewStudent makes a fresh anonymous student id.
func NewStudent() string { return newSecret() }

// IsInstructor checks a key against the room's secret in constant time.
func (r *Room) IsInstructor(key string) bool {
	if key == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hashSecret(key)), []byte(r.secretHash)) == 1
}
