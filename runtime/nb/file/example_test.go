package file_test

import (
	"fmt"

	"github.com/kvdescriptor/kvdescriptor/runtime/nb/file"
)

func ExampleParse() {
	config := `
linux/interface/veth1:
  name: veth1
  type: TYPE_VETH
  vethPeer: veth2
  ipAddresses: ["10.0.0.1/24"]
linux/interface/veth2: {name: veth2, type: TYPE_VETH, vethPeer: veth1}
`
	changes, err := file.Parse("config.yaml", []byte(config), testModels)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range changes {
		fmt.Println(c.Key)
	}

	_, err = file.Parse("config.yaml", []byte(config+"linux/interface/veth3:\n  name: veth3\n  mtu: big\n"), testModels)
	fmt.Println(err)
	// Output:
	// linux/interface/veth1
	// linux/interface/veth2
	// config.yaml:10:8: key "linux/interface/veth3": field mtu: "big" is not a uint32
}
