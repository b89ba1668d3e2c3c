package resp_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lockmux/lockmux/resp"
)

// Encode SET key token NX PX 30000 into a reusable buffer.
func ExampleAppendArrayHeader() {
	var buf []byte
	buf = resp.AppendArrayHeader(buf[:0], 6)
	buf = resp.AppendBulkString(buf, "SET")
	buf = resp.AppendBulkString(buf, "lock:orders")
	buf = resp.AppendBulkString(buf, "f3a9c2")
	buf = resp.AppendBulkString(buf, "NX")
	buf = resp.AppendBulkString(buf, "PX")
	buf = resp.AppendBulkInt(buf, 30000)
	fmt.Printf("%q\n", buf)
	// Output:
	// "*6\r\n$3\r\nSET\r\n$11\r\nlock:orders\r\n$6\r\nf3a9c2\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n"
}

func ExampleAppendCommand() {
	buf := resp.AppendCommand(nil, "EVALSHA", "e0e1f9fa", "1", "lock:orders", "f3a9c2")
	fmt.Printf("%q\n", buf)
	// Output:
	// "*5\r\n$7\r\nEVALSHA\r\n$8\r\ne0e1f9fa\r\n$1\r\n1\r\n$11\r\nlock:orders\r\n$6\r\nf3a9c2\r\n"
}

// Parse replies from a buffer, telling "need more bytes" from "bad bytes".
func ExampleParse() {
	buf := []byte("+OK\r\n:1\r\n$5\r\nhel")
	for {
		v, n, err := resp.Parse(buf, resp.Limits{})
		switch {
		case errors.Is(err, resp.ErrIncomplete):
			fmt.Printf("incomplete: %q\n", buf)
			return
		case err != nil:
			fmt.Println("protocol error, close the connection:", err)
			return
		}
		fmt.Println(v)
		buf = buf[n:]
	}
	// Output:
	// "OK"
	// (integer) 1
	// incomplete: "$5\r\nhel"
}

func ExampleParse_protocolError() {
	_, _, err := resp.Parse([]byte("$9223372036854775807\r\n"), resp.Limits{})
	var protocolErr *resp.ProtocolError
	fmt.Println(errors.As(err, &protocolErr), errors.Is(err, resp.ErrTooLarge))
	fmt.Println(err)
	// Output:
	// true true
	// resp: protocol error at offset 7: length exceeds the limit
}

// Read the replies of a stream, including an error reply, an attribute and
// a push.
func ExampleReader_ReadReply() {
	stream := "+OK\r\n-NOSCRIPT No matching script. Please use EVAL.\r\n" +
		"|1\r\n+ttl\r\n:3\r\n$-1\r\n>2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nfoo\r\n"
	reader := resp.NewReader(strings.NewReader(stream), resp.Limits{})
	for {
		v, err := reader.ReadReply()
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Println("close the connection:", err)
			return
		}
		if v.IsError() {
			var serverErr *resp.ServerError
			errors.As(v.Err(), &serverErr)
			fmt.Println("server error, code", serverErr.Code())
			continue
		}
		fmt.Println(v)
	}
	// Output:
	// "OK"
	// server error, code NOSCRIPT
	// (nil)
	// (push) ["invalidate", ["foo"]]
}
