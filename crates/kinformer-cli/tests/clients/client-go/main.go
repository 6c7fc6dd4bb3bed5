// A client-go check of `kinformer serve`: shared informers on pods and leases through the
// kubeconfig the server wrote (TLS, bearer token), a lease created with the typed clientset,
// and what the caches hold printed as one JSON line.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: client-go-check KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Args[1])
	if err != nil {
		fail("kubeconfig: %v", err)
	}
	// Unmodified: client-go's typed clients speak protobuf for built-in kinds (requests,
	// responses, lists and watch frames), as they do against kube-apiserver.
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fail("clientset: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	factory := informers.NewSharedInformerFactory(cs, 0)
	pods := factory.Core().V1().Pods().Informer()
	leases := factory.Coordination().V1().Leases().Informer()
	added := make(chan string, 16)
	if _, err := leases.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if l, ok := o.(*coordinationv1.Lease); ok {
				added <- l.Name
			}
		},
	}); err != nil {
		fail("handler: %v", err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, leases.HasSynced) {
		fail("caches did not sync")
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "from-client-go"}}
	if _, err := cs.CoordinationV1().Leases("default").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		fail("create lease: %v", err)
	}
	var seen string
	for seen != "from-client-go" {
		select {
		case seen = <-added:
		case <-ctx.Done():
			fail("the lease informer did not see the new lease")
		}
	}
	got, err := cs.CoordinationV1().Leases("default").Get(ctx, "from-client-go", metav1.GetOptions{})
	if err != nil {
		fail("get lease: %v", err)
	}
	holder := "client-go"
	got.Spec.HolderIdentity = &holder
	if _, err := cs.CoordinationV1().Leases("default").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		fail("update lease: %v", err)
	}
	for {
		obj, exists, err := leases.GetStore().GetByKey("default/from-client-go")
		if err != nil {
			fail("store: %v", err)
		}
		if l, ok := obj.(*coordinationv1.Lease); exists && ok && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == holder {
			break
		}
		select {
		case <-ctx.Done():
			fail("the lease informer did not see the update")
		case <-time.After(20 * time.Millisecond):
		}
	}
	// An error answered in protobuf (the clientset's Accept prefers it): client-go reads the
	// Status itself (reason and message), not only the HTTP code.
	_, err = cs.CoordinationV1().Leases("default").Get(ctx, "missing", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		fail("get of a missing lease: want NotFound, got %v", err)
	}
	out, _ := json.Marshal(map[string]any{"pods": len(pods.GetStore().List()), "lease": seen, "missing": err.Error()})
	fmt.Println(string(out))
}
