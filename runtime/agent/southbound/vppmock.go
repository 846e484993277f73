package southbound

import (
	"encoding/binary"
	"reflect"
	"strings"
	"sync"

	"go.fd.io/govpp/adapter/mock"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/codec"
)

// mockVPPSocket, given as the VPP socket, runs the VPP plugin over govpp's
// mock adapter instead of a VPP: for a machine without one (the demo).
const mockVPPSocket = "mock"

// newMockVPP returns govpp's mock adapter answering as a VPP that accepts
// every request: each gets its reply with retval 0, and a new index where
// the reply has one (sw_if_index, bd_id). It keeps no state: its dumps
// are empty, so a resync finds nothing and creates everything again.
func newMockVPP() *mock.VppAdapter {
	a := mock.NewVppAdapter()
	types := map[string]reflect.Type{}
	for _, msgs := range api.GetRegisteredMessages() {
		for _, m := range msgs {
			types[m.GetMessageName()] = reflect.TypeOf(m).Elem()
		}
	}
	var mu sync.Mutex
	next := uint32(1)
	a.MockReplyHandler(func(req mock.MessageDTO) ([]byte, uint16, bool) {
		name := req.MsgName
		if name == "" { // the mock's fixed ids
			name, _ = a.GetMsgNameByID(req.MsgID)
		}
		rt, ok := types[name+"_reply"]
		if strings.HasSuffix(name, "_dump") || !ok {
			return nil, 0, false // a dump's details: none; its control_ping is answered
		}
		reply := reflect.New(rt)
		mu.Lock()
		for _, f := range []string{"SwIfIndex", "BdID"} {
			if v := reply.Elem().FieldByName(f); v.IsValid() && v.Kind() == reflect.Uint32 {
				v.SetUint(uint64(next))
			}
		}
		next++
		mu.Unlock()
		msg := reply.Interface().(api.Message)
		id, err := a.GetMsgID(msg.GetMessageName(), msg.GetCrcString())
		if err != nil {
			return nil, 0, false
		}
		data, err := codec.DefaultCodec.EncodeMsg(msg, id)
		if err != nil {
			return nil, 0, false
		}
		binary.BigEndian.PutUint32(data[2:6], req.ClientID)
		return data, id, true
	})
	return a
}
