/* state_fixture.h: a small cluster state shared by the OOM sweep and the
 * fuzz harness: two admitted legacy pods of one v6e-16 replica (worker ids
 * 0 and 1) and four tpu7x nodes in two subblocks of two hosts. JSON arrays,
 * as wh_memstate_add_pods / wh_memstate_add_nodes take them. */
#ifndef WH_STATE_FIXTURE_H
#define WH_STATE_FIXTURE_H

#define WH_FIXTURE_POD(name, id)                                                                       \
    "{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"default\",\"labels\":{"                      \
    "\"ray.io/cluster\":\"raycluster-tpu-v6e-multihost\",\"ray.io/group\":\"tpu-group\","              \
    "\"ray.io/node-type\":\"worker\",\"app.kubernetes.io/created-by\":\"kuberay-operator\","           \
    "\"replicaIndex\":\"tpu-group-0\"}},"                                                              \
    "\"spec\":{\"containers\":[{\"name\":\"w\",\"resources\":{\"limits\":{\"google.com/tpu\":\"4\"}}," \
    "\"env\":[{\"name\":\"TPU_WORKER_ID\",\"value\":\"" id "\"}]}]}}"

#define WH_FIXTURE_NODE(name, sb)                            \
    "{\"metadata\":{\"name\":\"" name "\",\"labels\":{"      \
    "\"cloud.google.com/gke-tpu-accelerator\":\"tpu7x\","    \
    "\"cloud.google.com/gke-tpu-topology\":\"4x4x4\","       \
    "\"cloud.google.com/gke-nodepool\":\"pool-a\","          \
    "\"cloud.google.com/gce-topology-block\":\"b1\","        \
    "\"cloud.google.com/gce-topology-subblock\":\"" sb "\"," \
    "\"cloud.google.com/gce-topology-host\":\"h-" name "\"}}}"

#define WH_FIXTURE_PODS "[" WH_FIXTURE_POD("w0", "0") "," WH_FIXTURE_POD("w1", "1") "]"
#define WH_FIXTURE_NODES                                                                   \
    "[" WH_FIXTURE_NODE("n1", "sb1") "," WH_FIXTURE_NODE("n2", "sb1") "," WH_FIXTURE_NODE( \
        "n3", "sb2") "," WH_FIXTURE_NODE("n4", "sb2") "]"

#endif
