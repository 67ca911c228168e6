package cli

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"stepthrough/api"
	"stepthrough/classroom"
	"stepthrough/hfhub"
	"stepthrough/models"
	"stepthrough/server"
	"stepthrough/static"
)

// runServe runs the web app until ctx is done (Ctrl-C, SIGTERM).
func runServe(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "serve", "[--addr HOST:PORT] [--models-dir DIRS] [--hf-cache=false] [--data-dir DIR | --store postgres://… [--bus nats://… [--bus-user USER | --bus-token TOKEN | --bus-nkey FILE]]] [--allowed-hosts HOSTS] [--trusted-proxies CIDRS] [--tls-cert FILE --tls-key FILE] [--memory-budget MiB] [--work-budget G] [--work-timeout SECONDS] [--slots-per-address N] [--api-key KEY] [--api-max-concurrent N] [--api-max-tokens N] [--max-students N] [--students-per-address N]")
	addr := fs.String("addr", "127.0.0.1:8080", "listen `address` (0.0.0.0:8080 serves a LAN)")
	hosts := fs.String("allowed-hosts", "", "comma-separated `names` this server answers to (default: the listen host and localhost; any host on 0.0.0.0)")
	proxies := fs.String("trusted-proxies", "", "comma-separated `CIDRs` of reverse proxies whose X-Forwarded-For is believed (default: none, the socket's peer is the client)")
	cert := fs.String("tls-cert", "", "serve HTTPS with this certificate `file` (PEM)")
	key := fs.String("tls-key", "", "the certificate's private key `file` (PEM)")
	budget := fs.Int("memory-budget", 4096, "`MiB` of KV cache and trace all viewers' runs may hold together (a run over it is told the server is busy)")
	work := fs.Int("work-budget", 100, "`billions` of multiply-adds one request's engine work (/patching, Compare, an Explorer run's logit lens) may be estimated to take; more is refused with the estimate")
	workTimeout := fs.Int("work-timeout", 30, "`seconds` of work after which one request (a page's engine work, an Explorer action) is stopped and its slot freed")
	perAddrSlots := fs.Int("slots-per-address", 0, "work slots (one per core, at least 2) one address may hold at once; the others wait their turn (0: half)")
	dirs := fs.String("models-dir", "", "more `directories` of .gguf models, comma-separated (models/ and the embedded lesson models are always offered)")
	hfCache := fs.Bool("hf-cache", os.Getenv("STEPTHROUGH_HF_CACHE") != "0", "offer the GGUF models in the Hugging Face cache (what stepthrough pull, huggingface_hub and llama.cpp fetched: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub) as ORG/REPO:QUANT; --hf-cache=false or STEPTHROUGH_HF_CACHE=0 turns it off")
	data := fs.String("data-dir", "data", "`directory` where classrooms are stored (rooms.bolt) and the cookie-signing secret is kept")
	store := fs.String("store", "", "keep classrooms in PostgreSQL at this `address` (postgres://USER:PASSWORD@HOST:PORT/DATABASE) instead of the data directory: several servers may share it")
	bus := fs.String("bus", "", "announce room changes on NATS at this `address` (nats://HOST:PORT, or nats://USER:PASSWORD@HOST:PORT) to the other servers sharing --store, so their students follow at once (without it they notice within 2 s)")
	busUser := fs.String("bus-user", "", "the `user` this server is on the NATS server (its password: --bus-password, else $STEPTHROUGH_BUS_PASSWORD)")
	busPassword := fs.String("bus-password", "", "the bus user's `password` (default: $STEPTHROUGH_BUS_PASSWORD, which the process list does not show)")
	busToken := fs.String("bus-token", "", "a `token` the NATS server takes instead of a user (default: $STEPTHROUGH_BUS_TOKEN)")
	busNkey := fs.String("bus-nkey", "", "an nkey user seed `file` the NATS server takes instead of a user")
	apiKey := fs.String("api-key", os.Getenv("STEPTHROUGH_API_KEY"), "require this `key` on the OpenAI-compatible API (Authorization: Bearer KEY) and its request pages (default: $STEPTHROUGH_API_KEY; empty: no key)")
	apiConc := fs.Int("api-max-concurrent", 8, "API sequences (requests' choices) generating at once in a model's continuous batch; more requests wait in a queue")
	apiQueue := fs.Int("api-max-queued", 64, "API requests that may wait for a place in the batch; beyond it they are answered 429")
	apiKV := fs.Int("api-kv-cache", 512, "`MiB` of KV cache per model for the API's batch, its prefix cache included (at least one whole context is kept)")
	apiMax := fs.Int("api-max-tokens", api.DefaultLimits.MaxTokens, "the most tokens an API request may generate per choice (max_tokens above it is refused)")
	maxStudents := fs.Int("max-students", classroom.DefaultMaxStudents, "student `tabs` one room may have connected to this server (a keynote room spread over several servers holds this many on each)")
	perAddr := fs.Int("students-per-address", classroom.DefaultStudentsPerAddress, "student `ids` from one network address that may answer a room's polls (raise it when a class reaches the server through one shared address)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *maxStudents < 1 || *maxStudents > 10000 {
		return usageError{fmt.Errorf("--max-students must be 1 to 10000, got %d", *maxStudents)}
	}
	if *perAddr < 1 || *perAddr > *maxStudents {
		return usageError{fmt.Errorf("--students-per-address must be 1 to --max-students (%d), got %d", *maxStudents, *perAddr)}
	}
	if *budget < 16 || *budget > 1<<20 {
		return usageError{fmt.Errorf("--memory-budget must be 16 to 1048576 MiB, got %d", *budget)}
	}
	if *work < 1 || *work > 1<<20 || *workTimeout < 1 || *workTimeout > 3600 || *perAddrSlots < 0 || *perAddrSlots > 1024 {
		return usageError{fmt.Errorf("--work-budget must be 1 to 1048576 (billions), --work-timeout 1 to 3600 s and --slots-per-address 0 to 1024")}
	}
	if *apiConc < 1 || *apiConc > 256 || *apiQueue < 1 || *apiQueue > 4096 || *apiMax < 1 || *apiMax > 1<<16 || *apiKV < 1 || *apiKV > 1<<20 {
		return usageError{fmt.Errorf("--api-max-concurrent must be 1 to 256, --api-max-queued 1 to 4096, --api-max-tokens 1 to 65536 and --api-kv-cache 1 to 1048576 MiB")}
	}
	if (*cert == "") != (*key == "") {
		return usageError{fmt.Errorf("--tls-cert and --tls-key go together")}
	}
	trusted, err := server.ParseCIDRs(*proxies)
	if err != nil {
		return usageError{err}
	}
	var allowed []string
	if *hosts != "" {
		allowed = strings.Split(*hosts, ",")
	}
	if msg := static.Missing(); msg != "" {
		return fmt.Errorf("%s", msg)
	}
	modelDirs := []string{"models"}
	if *dirs != "" {
		modelDirs = append(modelDirs, strings.Split(*dirs, ",")...)
	}
	if ref := filepath.Join("..", "shared", "reference", "models"); dirExists(ref) {
		modelDirs = append(modelDirs, ref) // the reference model beside the checkout is offered too
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, nil))
	var hfModels map[string]string
	var hub *hfhub.Client
	if *hfCache {
		if hub, err = hfhub.FromEnv(); err != nil {
			log.Warn("the Models page pulls no models", "err", err)
		}
		var dir string
		if hfModels, dir, err = hfCacheModels(); err != nil {
			log.Warn("the Hugging Face cache's models are not offered", "err", err)
		} else if len(hfModels) > 0 {
			log.Info("offering the Hugging Face cache's models", "dir", dir, "models", len(hfModels))
		}
	}
	s, err := server.New(server.Config{Addr: *addr, ModelsDirs: modelDirs, ModelFiles: hfModels, Hub: hub, Logger: log, DataDir: *data, StoreURL: *store, BusURL: *bus,
		BusAuth:      busAuth(*busUser, *busPassword, *busToken, *busNkey),
		Embedded:     models.Embedded(),
		AllowedHosts: allowed, TrustedProxies: trusted, TLSCert: *cert, TLSKey: *key, MemoryBudget: int64(*budget) << 20,
		WorkBudget: int64(*work) * 1e9, WorkTimeout: time.Duration(*workTimeout) * time.Second, SlotsPerAddress: *perAddrSlots,
		Limits: classroom.Limits{StudentsPerAddress: *perAddr, MaxStudents: *maxStudents},
		API: server.APIConfig{Key: *apiKey, MaxConcurrent: *apiConc, MaxQueued: *apiQueue, KVBytes: int64(*apiKV) << 20,
			Limits: apiLimits(*apiMax)}})
	if err != nil {
		return err
	}
	if len(s.Models()) == 0 {
		fmt.Fprintf(env.Stderr, "no models found in %s: add a .gguf or pass --models-dir\n", strings.Join(modelDirs, ", "))
	}
	scheme := "http"
	if *cert != "" {
		scheme = "https"
	}
	return s.Run(ctx, func(a string) { fmt.Fprintf(env.Stdout, "Stepthrough is serving on %s://%s\n", scheme, a) })
}

// hfCacheModels are the GGUF models in the Hugging Face cache, by the
// names serve offers them as (ORG/REPO:QUANT), and the cache's folder.
func hfCacheModels() (map[string]string, string, error) {
	dir, err := hfhub.CacheDir()
	if err != nil {
		return nil, "", err
	}
	ms, err := hfhub.Cache{Dir: dir}.Models()
	if err != nil {
		return nil, dir, err
	}
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		out[m.Name] = m.Path
	}
	return out, dir, nil
}

func dirExists(d string) bool {
	st, err := os.Stat(d)
	return err == nil && st.IsDir()
}

// busAuth are the bus's credentials from the flags, the password and the
// token from the environment when no flag gives them: a flag's value is
// visible to every user of the machine in the process list, and -h would
// print a default taken from the environment.
func busAuth(user, password, token, nkey string) classroom.BusAuth {
	return classroom.BusAuth{User: user, Password: cmp.Or(password, envIf(user != "", "STEPTHROUGH_BUS_PASSWORD")),
		Token: cmp.Or(token, envIf(user == "" && nkey == "", "STEPTHROUGH_BUS_TOKEN")), NkeyFile: nkey}
}

// envIf is the environment variable name when cond holds, else "".
func envIf(cond bool, name string) string {
	if !cond {
		return ""
	}
	return os.Getenv(name)
}

// apiLimits are the API's default limits with the token cap set.
func apiLimits(maxTokens int) api.Limits {
	l := api.DefaultLimits
	l.MaxTokens = maxTokens
	return l
}
