package kvproto

import "github.com/durableraft/durableraft/impl/wire"

// AppendRequestFrames appends batch to dst as FrameRequests frames, each
// holding as many requests as fit in PayloadBytesMax and BatchMax, and at
// least one (a request larger than a frame goes alone; the receiver
// refuses it). This is the client's write path: one write syscall carries
// every frame of a batch.
func AppendRequestFrames(dst []byte, batch []Request) []byte {
	return appendFrames(dst, FrameRequests, batch, RequestSize, EncodeRequests)
}

// AppendResponseFrames is AppendRequestFrames for the server's answers.
func AppendResponseFrames(dst []byte, batch []Response) []byte {
	return appendFrames(dst, FrameResponses, batch, ResponseSize, EncodeResponses)
}

// appendFrames splits batch into frames of typ: a frame's payload is the
// 4-byte count and the items, at most PayloadBytesMax bytes by size and at
// most BatchMax items.
func appendFrames[T any](dst []byte, typ uint8, batch []T, size func(*T) int, encode func([]byte, []T) []byte) []byte {
	for k := 0; k < len(batch); {
		payload, j := 4, k
		for j < len(batch) && j-k < BatchMax && (j == k || payload+size(&batch[j]) <= PayloadBytesMax) {
			payload += size(&batch[j])
			j++
		}
		var start int
		dst, start = wire.BeginFrame(dst, typ)
		dst = encode(dst, batch[k:j])
		dst = wire.FinishFrame(dst, start)
		k = j
	}
	return dst
}
