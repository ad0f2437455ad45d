// cni-driver runs a CNI network configuration list the way a container runtime does, through
// libcni (Debian's golang-github-appc-cni-dev): ADD, CHECK and DEL through libcni itself, and GC
// and STATUS (which this libcni release predates) by executing each plugin of the list that
// supports spec 1.1.0 with the same environment and stdin a 1.1.0 runtime would give it.
//
// Used by the CNI tests (tests/unit/cni/driver_test.cc) and the e2e VM suite.
//
//	cni-driver -conflist net.conflist -cmd ADD -netns /run/netns/p -id c1 -ifname net1 \
//	           -plugin-dirs /usr/lib/cni:/opt/cni/bin [-cache-dir DIR] [-valid c1/net1,c2/net1]
//
// A failed ADD is followed by DEL of the whole list, as runtimes do (-no-cleanup to skip).
// Prints the ADD result JSON on stdout. On failure prints the CNI error object (code, msg,
// details) on stdout and exits 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
)

func fail(err error) {
	var cniErr *types.Error
	out := map[string]interface{}{"code": 999, "msg": err.Error()}
	if errors.As(err, &cniErr) {
		out["code"] = cniErr.Code
		out["msg"] = cniErr.Msg
		if cniErr.Details != "" {
			out["details"] = cniErr.Details
		}
		out["context"] = err.Error()
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	os.Exit(1)
}

func supports110(ctx context.Context, path string) bool {
	info, err := invoke.GetVersionInfo(ctx, path, nil)
	if err != nil {
		return false
	}
	for _, v := range info.SupportedVersions() {
		if v == "1.1.0" {
			return true
		}
	}
	return false
}

// runRaw sends GC or STATUS to every plugin of the list that speaks 1.1.0, in order.
func runRaw(ctx context.Context, list *libcni.NetworkConfigList, cmd string, dirs []string,
	valid []map[string]string) error {
	for _, p := range list.Plugins {
		path, err := invoke.FindInPath(p.Network.Type, dirs)
		if err != nil {
			return err
		}
		if !supports110(ctx, path) {
			fmt.Fprintf(os.Stderr, "cni-driver: %s: plugin %s does not support 1.1.0, skipped\n", cmd, p.Network.Type)
			continue
		}
		var conf map[string]interface{}
		if err := json.Unmarshal(p.Bytes, &conf); err != nil {
			return err
		}
		conf["name"] = list.Name
		conf["cniVersion"] = "1.1.0"
		if cmd == "GC" {
			conf["cni.dev/valid-attachments"] = valid
		}
		stdin, _ := json.Marshal(conf)
		args := &invoke.Args{Command: cmd, Path: strings.Join(dirs, ":")}
		if err := invoke.ExecPluginWithoutResult(ctx, path, stdin, args, nil); err != nil {
			return fmt.Errorf("plugin %s failed (%s): %w", p.Network.Type, strings.ToLower(cmd), err)
		}
	}
	return nil
}

func main() {
	conflist := flag.String("conflist", "", "network configuration list file")
	cmd := flag.String("cmd", "ADD", "ADD, CHECK, DEL, GC, STATUS or VERSION")
	netns := flag.String("netns", "", "pod network namespace path")
	id := flag.String("id", "", "container ID")
	ifname := flag.String("ifname", "eth0", "interface name in the pod")
	pluginDirs := flag.String("plugin-dirs", "/opt/cni/bin", "colon-separated plugin directories")
	cacheDir := flag.String("cache-dir", "", "libcni result cache dir (default libcni's)")
	validFlag := flag.String("valid", "", "GC: valid attachments, comma-separated containerID/ifname")
	noCleanup := flag.Bool("no-cleanup", false, "ADD: do not run DEL after a failed ADD")
	argsFlag := flag.String("args", "", "CNI_ARGS as runtimes pass them: K=V pairs separated by ';' "+
		"(containerd and CRI-O pass K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_UID...)")
	flag.Parse()

	dirs := strings.Split(*pluginDirs, ":")
	ctx := context.Background()
	if *cmd == "VERSION" {
		for _, p := range flag.Args() {
			path, err := invoke.FindInPath(p, dirs)
			if err != nil {
				fail(err)
			}
			info, err := invoke.GetVersionInfo(ctx, path, nil)
			if err != nil {
				fail(err)
			}
			b, _ := json.Marshal(map[string]interface{}{"plugin": p, "supportedVersions": info.SupportedVersions()})
			fmt.Println(string(b))
		}
		return
	}
	list, err := libcni.ConfListFromFile(*conflist)
	if err != nil {
		fail(err)
	}
	cni := libcni.NewCNIConfigWithCacheDir(dirs, *cacheDir, nil)
	rt := &libcni.RuntimeConf{ContainerID: *id, NetNS: *netns, IfName: *ifname}
	if *argsFlag != "" {
		for _, kv := range strings.Split(*argsFlag, ";") {
			parts := strings.SplitN(kv, "=", 2)
			if len(parts) != 2 {
				fail(fmt.Errorf("-args entry %q is not K=V", kv))
			}
			rt.Args = append(rt.Args, [2]string{parts[0], parts[1]})
		}
	}
	switch *cmd {
	case "ADD":
		res, err := cni.AddNetworkList(ctx, list, rt)
		if err != nil {
			// Runtimes (containerd, CRI-O) tear a failed sandbox's network down with DEL.
			if !*noCleanup {
				if delErr := cni.DelNetworkList(ctx, list, rt); delErr != nil {
					fmt.Fprintf(os.Stderr, "cni-driver: DEL after failed ADD: %v\n", delErr)
				}
			}
			fail(err)
		}
		// Print the result in the list's version, as the runtime received it.
		conv, err := res.GetAsVersion(list.CNIVersion)
		if err != nil {
			fail(err)
		}
		b, _ := json.Marshal(conv)
		fmt.Println(string(b))
	case "CHECK":
		if err := cni.CheckNetworkList(ctx, list, rt); err != nil {
			fail(err)
		}
	case "DEL":
		if err := cni.DelNetworkList(ctx, list, rt); err != nil {
			fail(err)
		}
	case "GC", "STATUS":
		valid := []map[string]string{}
		if *validFlag != "" {
			for _, a := range strings.Split(*validFlag, ",") {
				parts := strings.SplitN(a, "/", 2)
				if len(parts) != 2 {
					fail(fmt.Errorf("-valid entry %q is not containerID/ifname", a))
				}
				valid = append(valid, map[string]string{"containerID": parts[0], "ifname": parts[1]})
			}
		}
		if err := runRaw(ctx, list, *cmd, dirs, valid); err != nil {
			fail(err)
		}
	default:
		fail(fmt.Errorf("unknown -cmd %q", *cmd))
	}
}
