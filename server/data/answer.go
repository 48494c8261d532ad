package data

import "github.com/pario/pario/wire"

var _ wire.AnswerSizer = (*Handler)(nil)

// AnswerSize implements wire.AnswerSizer: a read's answer is up to its
// length, so the wire server takes that much from its memory budget before
// the read runs. Without it, a client pipelining large reads and never
// reading the answers would make the server hold them all.
func (h *Handler) AnswerSize(op uint8, args []byte) int64 {
	if op != OpRead.Code {
		return 0
	}
	var req ReadRequest
	if err := req.Decode(wire.NewDec(args)); err != nil || req.Length < 0 {
		return 0 // the handler refuses the request; nothing to hold
	}
	return req.Length
}
