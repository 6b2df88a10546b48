#!/usr/bin/env bash
# Installs ai-smartness (long-term memory for Claude Code) for one project.
#
# Usage:
#   ./install.sh PROJECT [--mode MODE] [--lang LANG] [--prefix DIR] [--no-start] [--plugin]
#   ./install.sh PROJECT --uninstall [--purge]
#
#   PROJECT       the project folder (must exist)
#   --mode MODE   light | normal | heavy | max   (default: normal, or the project's current mode)
#   --lang LANG   en | fr | es                   (default: en, or the project's current language)
#   --prefix DIR  binaries go to DIR/bin (default: ~/.local, so ~/.local/bin)
#   --no-start    do not start the project's daemon
#   --plugin      register the Claude Code plugin (user scope, with the `claude` on PATH)
#                 instead of writing hooks into PROJECT/.claude/settings.json
#   --uninstall   remove what the install added: the hooks in PROJECT/.claude/settings.json,
#                 the install record, and the binaries (unless another project still uses them);
#                 after --plugin, the plugin and its marketplace (unless another install uses them).
#                 PROJECT/.ai/ (the memory) and the shared model files are kept.
#   --purge       with --uninstall: delete PROJECT/.ai/ too
#
# Only when stdin is a terminal and --lang or --mode is missing does it ask for them.
# Running it twice changes nothing. Each install is recorded in
#   ${AI_SMARTNESS_DATA_DIR:-${XDG_DATA_HOME:-~/.local/share}/ai-smartness}/installs/
# (one file per project), which is what --uninstall removes.
set -euo pipefail

# --- output --------------------------------------------------------------------
step() { printf '==> %s\n' "$*"; }
say() { printf '    %s\n' "$*"; }
warn() { printf 'install.sh: warning: %s\n' "$*" >&2; }
die() {
    printf 'install.sh: error: %s\n' "$*" >&2
    exit 1
}
usage() { sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
usage_error() {
    printf 'install.sh: %s\n' "$*" >&2
    sed -n '4,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    printf '(./install.sh --help for details)\n' >&2
    exit 2
}

# --- arguments -----------------------------------------------------------------
project_arg="" mode="" lang="" prefix_arg="" no_start=no uninstall=no purge=no plugin=no
valid_mode() { [[ "$1" =~ ^(light|normal|heavy|max)$ ]]; }
valid_lang() { [[ "$1" =~ ^(en|fr|es)$ ]]; }

while (($# > 0)); do
    arg=$1
    shift
    value=""
    case "$arg" in
    --mode=* | --lang=* | --prefix=*)
        value=${arg#*=}
        arg=${arg%%=*}
        [[ -n "$value" ]] || usage_error "$arg needs a value"
        ;;
    --mode | --lang | --prefix)
        if (($# == 0)) || [[ -z "$1" ]]; then usage_error "$arg needs a value"; fi
        value=$1
        shift
        ;;
    esac
    case "$arg" in
    -h | --help)
        usage
        exit 0
        ;;
    --mode)
        valid_mode "$value" || usage_error "--mode must be light, normal, heavy or max (got '$value')"
        mode=$value
        ;;
    --lang)
        valid_lang "$value" || usage_error "--lang must be en, fr or es (got '$value')"
        lang=$value
        ;;
    --prefix) prefix_arg=$value ;;
    --no-start) no_start=yes ;;
    --plugin) plugin=yes ;;
    --uninstall) uninstall=yes ;;
    --purge) purge=yes ;;
    --)
        if (($# > 1)) || { (($# == 1)) && [[ -n "$project_arg" ]]; }; then
            usage_error "only one project folder can be given"
        fi
        (($# == 0)) || project_arg=$1
        shift $#
        ;;
    -*) usage_error "unknown option '$arg'" ;;
    *)
        [[ -z "$project_arg" ]] || usage_error "only one project folder can be given (got '$project_arg' and '$arg')"
        project_arg=$arg
        ;;
    esac
done

[[ -n "$project_arg" ]] || usage_error "missing the project folder"
if [[ "$uninstall" == yes ]]; then
    [[ -z "$mode" && -z "$lang" && "$no_start" == no ]] ||
        usage_error "--mode, --lang and --no-start do not apply to --uninstall"
else
    [[ "$purge" == no ]] || usage_error "--purge only goes with --uninstall"
fi

# --- paths ---------------------------------------------------------------------
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
home="${HOME:?HOME is not set}"

# The data dir rule of scripts/fetch-assets.sh and the daemon (crates/embed/src/assets.rs):
# relative XDG values are invalid per the spec and ignored.
xdg_data="${XDG_DATA_HOME:-}"
[[ "$xdg_data" == /* ]] || xdg_data="$home/.local/share"
data_dir="${AI_SMARTNESS_DATA_DIR:-$xdg_data/ai-smartness}"
installs_dir="$data_dir/installs"

# An absolute path (a leading ~/ is the home folder: the shell does not expand it in --prefix=~/x).
absolute() {
    local p=$1
    # shellcheck disable=SC2088 # a literal ~ is what is being matched
    [[ "$p" == "~" || "$p" == "~/"* ]] && p="$home${p#\~}"
    if [[ "$p" == /* ]]; then printf '%s' "$p"; else printf '%s/%s' "$PWD" "$p"; fi
}
# Canonical form of an existing folder (symlinks resolved).
canonical() { (cd -- "$1" && pwd -P); }

# Short stable key of a path: the first 16 hex digits of its sha256.
path_key() {
    local sum
    if command -v sha256sum >/dev/null 2>&1; then
        sum=$(printf '%s' "$1" | sha256sum)
    elif command -v shasum >/dev/null 2>&1; then
        sum=$(printf '%s' "$1" | shasum -a 256)
    else
        sum=$(printf '%s' "$1" | cksum)
        sum=$(printf '%016x' "${sum%% *}")
    fi
    printf '%s' "${sum:0:16}"
}

# --- install records -------------------------------------------------------------
# One file per project: key=value lines (project=, prefix=, bin= per binary,
# created_dir= per folder the install created, outermost first).
manifest_for() { printf '%s/%s.manifest' "$installs_dir" "$(path_key "$1")"; }

# Prints every value of KEY in a manifest, one per line.
manifest_values() {
    local file=$1 key=$2 line
    [[ -f "$file" ]] || return 0
    while IFS= read -r line || [[ -n "$line" ]]; do
        [[ "$line" == "$key="* ]] && printf '%s\n' "${line#"$key="}"
    done <"$file"
    return 0
}
# Prints the first value of KEY in a manifest.
manifest_value() {
    local file=$1 key=$2 line
    [[ -f "$file" ]] || return 0
    while IFS= read -r line || [[ -n "$line" ]]; do
        if [[ "$line" == "$key="* ]]; then
            printf '%s\n' "${line#"$key="}"
            return 0
        fi
    done <"$file"
    return 0
}

# Prints the project of every other manifest that installed into PREFIX.
other_projects_using() {
    local prefix=$1 self=$2 file
    [[ -d "$installs_dir" ]] || return 0
    for file in "$installs_dir"/*.manifest; do
        [[ -f "$file" && "$file" != "$self" ]] || continue
        [[ "$(manifest_value "$file" prefix)" == "$prefix" ]] && manifest_value "$file" project
    done
    return 0
}

# Whether some manifest records BIN as installed into PREFIX (so the file there is ours).
recorded_binary() {
    local prefix=$1 bin=$2 file
    [[ -d "$installs_dir" ]] || return 1
    for file in "$installs_dir"/*.manifest; do
        [[ -f "$file" ]] || continue
        [[ "$(manifest_value "$file" prefix)" == "$prefix" ]] || continue
        # (no grep -q: it may stop reading early, and pipefail would see the writer fail)
        manifest_values "$file" bin | grep -xF -- "$bin" >/dev/null && return 0
    done
    return 1
}

# Removes the binaries a manifest lists (and the folders it created, when empty),
# unless another project's manifest still uses the same prefix.
remove_binaries_of() {
    local file=$1 prefix bins=() dirs=() users=() name removed=() i line
    prefix=$(manifest_value "$file" prefix)
    [[ -n "$prefix" ]] || return 0
    while IFS= read -r line; do users+=("$line"); done < <(other_projects_using "$prefix" "$file")
    if ((${#users[@]} > 0)); then
        say "kept the binaries in $prefix/bin: still used by ${#users[@]} other project(s): ${users[*]}"
        return 0
    fi
    while IFS= read -r line; do bins+=("$line"); done < <(manifest_values "$file" bin)
    for name in ${bins[@]+"${bins[@]}"}; do
        [[ "$name" == */* || -z "$name" ]] && continue
        if [[ -e "$prefix/bin/$name" || -L "$prefix/bin/$name" ]]; then
            rm -f -- "$prefix/bin/$name"
            removed+=("$name")
        fi
    done
    if ((${#removed[@]} > 0)); then
        say "removed ${removed[*]} from $prefix/bin"
    else
        say "no binaries left to remove in $prefix/bin"
    fi
    while IFS= read -r line; do dirs+=("$line"); done < <(manifest_values "$file" created_dir)
    for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do
        [[ -d "${dirs[$i]}" ]] && rmdir -- "${dirs[$i]}" 2>/dev/null && say "removed the empty folder ${dirs[$i]} (the install created it)"
    done
    return 0
}

# The copy of a project's .claude/settings.json from before its first install: `ai hooks`
# rewrites the file in its own format, so --uninstall puts the original bytes back when,
# apart from our hooks, nothing changed since.
settings_backup_for() { printf '%s.settings.json' "${1%.manifest}"; }

# Whether FILE (absent or not) is what `ai hooks` makes of BACKUP once our hooks are gone:
# checked by running install + uninstall on a copy of BACKUP in a scratch folder.
same_settings_without_hooks() {
    local ai=$1 backup=$2 file=$3 scratch expected same=no
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/ai-smartness-settings.XXXXXX") || return 1
    expected="$scratch/.claude/settings.json"
    if mkdir -p "$scratch/.claude" && cp -- "$backup" "$expected" &&
        "$ai" hooks install --project "$scratch" --bin-dir "$scratch/bin" >/dev/null &&
        "$ai" hooks uninstall --project "$scratch" >/dev/null; then
        if [[ -f "$expected" ]]; then
            if [[ -f "$file" ]] && cmp -s -- "$expected" "$file"; then same=yes; fi
        elif [[ ! -e "$file" ]]; then
            same=yes
        fi
    fi
    rm -rf -- "$scratch"
    [[ "$same" == yes ]]
}

tmp_files=()
cleanup() { ((${#tmp_files[@]} == 0)) || rm -f -- "${tmp_files[@]}"; }
trap cleanup EXIT

# Writes FILE with CONTENT atomically, only when it differs; sets $written to yes or no.
written=no
write_if_changed() {
    local file=$1 content=$2 tmp
    written=no
    [[ -f "$file" && "$(cat -- "$file")" == "$content" ]] && return 0
    mkdir -p -- "$(dirname -- "$file")" || die "cannot create $(dirname -- "$file")"
    tmp="$file.tmp.$$"
    tmp_files+=("$tmp")
    printf '%s\n' "$content" >"$tmp" || die "cannot write $tmp"
    mv -f -- "$tmp" "$file" || die "cannot write $file"
    written=yes
}

# Joins the arguments with ", ".
join() {
    local out="" item
    for item in "$@"; do out+="${out:+, }$item"; done
    printf '%s' "$out"
}

# --- the Claude Code plugin (--plugin) ----------------------------------------------
plugin_id="ai-smartness@ai-smartness"
plugin_market="ai-smartness"
# Whether another install record than FILE registered the plugin.
plugin_used_elsewhere() {
    local self=$1 file
    [[ -d "$installs_dir" ]] || return 1
    for file in "$installs_dir"/*.manifest; do
        [[ -f "$file" && "$file" != "$self" ]] || continue
        [[ -n "$(manifest_value "$file" plugin)" ]] && return 0
    done
    return 1
}

# =================================================================================
# --uninstall
# =================================================================================
if [[ "$uninstall" == yes ]]; then
    project_abs=$(absolute "$project_arg")
    project_abs=${project_abs%/}
    if [[ -d "$project_abs" ]]; then
        project=$(canonical "$project_abs")
    else
        warn "$project_abs does not exist: only its install record and binaries can be removed"
        project=$project_abs
    fi
    manifest=$(manifest_for "$project")
    if [[ ! -f "$manifest" && -d "$installs_dir" ]]; then
        # The record of a project reached through another path.
        for f in "$installs_dir"/*.manifest; do
            [[ -f "$f" ]] || continue
            m=$(manifest_value "$f" project)
            if [[ "$m" == "$project" || "$m" == "$project_abs" ]]; then
                manifest=$f
                break
            fi
        done
    fi

    step "uninstalling ai-smartness from $project"
    prefix=""
    if [[ -f "$manifest" ]]; then
        prefix=$(manifest_value "$manifest" prefix)
        say "install record: $manifest (binaries in $prefix/bin)"
        if [[ -n "$prefix_arg" && "$(absolute "$prefix_arg")" != "$prefix" ]]; then
            warn "ignoring --prefix $prefix_arg: this project was installed with --prefix $prefix"
        fi
    else
        say "no install record for $project in $installs_dir: no binaries will be removed"
    fi

    # The `ai` to run: the recorded one, else one of ours we can find (checked: another
    # program may well be called `ai`).
    ours() {
        [[ -f "$1" && -x "$1" ]] && [[ "$("$1" --version 2>/dev/null)" =~ ^ai\ [0-9] ]] &&
            "$1" hooks uninstall --help >/dev/null 2>&1
    }
    ai=""
    if [[ -n "$prefix" && -x "$prefix/bin/ai" ]]; then ai="$prefix/bin/ai"; fi
    for candidate in ${prefix_arg:+"$(absolute "$prefix_arg")/bin/ai"} "$repo/target/release/ai" "$(command -v ai || true)"; do
        [[ -z "$ai" ]] || break
        if [[ -n "$candidate" ]] && ours "$candidate"; then ai=$candidate; fi
    done

    if [[ -d "$project" ]]; then
        [[ -n "$ai" ]] || die "no 'ai' binary found to remove the hooks; build it (cargo build --release) and run this again"
        step "stopping the daemon"
        if [[ -d "$project/.ai" ]]; then
            rc=0
            info=$("$ai" --project "$project" --json daemon status 2>/dev/null) || rc=$?
            if ((rc == 3)); then
                say "daemon not running"
            else
                "$ai" --project "$project" daemon stop ||
                    die "could not stop the daemon of $project; stop it (ai --project $project daemon stop) and run this again"
                # `daemon stop` returns once the daemon let go of its lock: wait for the process
                # to be gone too, before anything under .ai/ is deleted.
                pid=$(printf '%s' "$info" | grep -o '"pid":[0-9][0-9]*' | head -n 1 | cut -d: -f2) || true
                tries=100
                while [[ -n "$pid" ]] && ((tries-- > 0)) && kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
            fi
        else
            say "no $project/.ai: no daemon to stop"
        fi

        step "removing the hooks from $project/.claude/settings.json"
        out=$("$ai" hooks uninstall --project "$project") || die "ai hooks uninstall failed (see above)"
        case "$out" in
        unchanged:*) say "no ai-smartness hooks were registered" ;;
        *) say "removed the ai-smartness hooks (every other setting is kept)" ;;
        esac
        backup=$(settings_backup_for "$manifest")
        if [[ -f "$backup" ]]; then
            if same_settings_without_hooks "$ai" "$backup" "$project/.claude/settings.json"; then
                mkdir -p -- "$project/.claude"
                cp -- "$backup" "$project/.claude/settings.json"
                say "restored the original settings.json byte for byte"
            else
                say "settings.json was edited since the install: kept as it is now, without our hooks"
            fi
        fi
    fi

    if [[ -n "$(manifest_value "$manifest" plugin)" ]]; then
        step "removing the Claude Code plugin"
        if plugin_used_elsewhere "$manifest"; then
            say "kept the plugin: another project's install registered it too"
        elif claude=$(command -v claude); then
            if "$claude" plugin uninstall "$plugin_id" --scope user >/dev/null 2>&1; then
                say "uninstalled $plugin_id"
            else
                say "$plugin_id was not installed"
            fi
            if "$claude" plugin marketplace remove "$plugin_market" >/dev/null 2>&1; then
                say "removed the marketplace $plugin_market"
            else
                say "no marketplace $plugin_market to remove"
            fi
            rm -f -- "$data_dir/plugin-bin-dir"
        else
            warn "no claude on PATH: remove the plugin yourself: claude plugin uninstall $plugin_id; claude plugin marketplace remove $plugin_market"
        fi
    fi

    step "removing the install record and binaries"
    if [[ -f "$manifest" ]]; then
        remove_binaries_of "$manifest"
        rm -f -- "$manifest" "$(settings_backup_for "$manifest")"
        say "removed $manifest"
        rmdir -- "$installs_dir" 2>/dev/null || true
    else
        say "nothing recorded: no binaries removed"
    fi

    if [[ -d "$project/.ai" ]]; then
        if [[ "$purge" == yes ]]; then
            rm -rf -- "${project:?}/.ai"
            step "deleted $project/.ai (--purge): the project's memory is gone"
        else
            step "kept $project/.ai (the project's memory); use --uninstall --purge to delete it"
        fi
    fi
    step "kept the model files in $data_dir (shared by every project; delete that folder to remove them)"
    step "done: ai-smartness is uninstalled from $project"
    exit 0
fi

# =================================================================================
# install
# =================================================================================
[[ -e "$project_arg" ]] || die "project folder $project_arg does not exist (create it first)"
[[ -d "$project_arg" ]] || die "$project_arg is not a folder"
project=$(canonical "$project_arg")

# Questions: only on a terminal, only for what the flags left out. An existing
# project offers its current values as defaults.
current_setting() {
    local file="$project/.ai/config.json" found
    [[ -f "$file" ]] || return 0
    found=$(grep -o "\"$1\": *\"[a-z]*\"" "$file" | head -n 1) || true
    found=${found%\"}
    printf '%s' "${found##*\"}"
}
existing_mode=$(current_setting mode)
existing_lang=$(current_setting language)
ask() { # ask QUESTION CHOICES DEFAULT VALIDATOR -> answer on stdout
    local answer
    while true; do
        read -r -p "$1 [$2] ($3): " answer || { printf '\n' >&2; answer=$3; }
        answer=${answer:-$3}
        answer=$(printf '%s' "$answer" | tr '[:upper:]' '[:lower:]')
        if "$4" "$answer"; then
            printf '%s' "$answer"
            return 0
        fi
        printf 'please answer one of: %s\n' "$2" >&2
    done
}
if [[ -t 0 ]]; then
    default_lang=en default_mode=normal
    if valid_lang "$existing_lang"; then default_lang=$existing_lang; fi
    if valid_mode "$existing_mode"; then default_mode=$existing_mode; fi
    [[ -n "$lang" ]] || lang=$(ask "Language" "en/fr/es" "$default_lang" valid_lang)
    [[ -n "$mode" ]] || mode=$(ask "Mode (quota of active threads)" "light/normal/heavy/max" "$default_mode" valid_mode)
fi
# Flags for `ai init`: what was given or chosen; the defaults only for a new project,
# so a re-run without flags keeps a project's current settings.
init_flags=()
if [[ -n "$mode" ]]; then init_flags+=(--mode "$mode"); elif [[ -z "$existing_mode" ]]; then init_flags+=(--mode normal); fi
if [[ -n "$lang" ]]; then init_flags+=(--lang "$lang"); elif [[ -z "$existing_lang" ]]; then init_flags+=(--lang en); fi

prefix_abs=$(absolute "${prefix_arg:-$home/.local}")
prefix_abs=${prefix_abs%/}
[[ ! -e "$prefix_abs" || -d "$prefix_abs" ]] || die "--prefix $prefix_abs is not a folder"
[[ ! -e "$prefix_abs/bin" || -d "$prefix_abs/bin" ]] || die "$prefix_abs/bin is not a folder"

step "installing ai-smartness for $project"

# --- 1. cargo --------------------------------------------------------------------
cargo=$(command -v cargo || true)
if [[ -z "$cargo" && -x "$home/.cargo/bin/cargo" ]]; then cargo="$home/.cargo/bin/cargo"; fi
[[ -n "$cargo" ]] || die "cargo not found: install the Rust toolchain from https://rustup.rs
    (curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh), open a new shell, and run this again"
step "using $("$cargo" --version 2>/dev/null || echo cargo) ($cargo)"

# --- 2. build ----------------------------------------------------------------------
locked=()
[[ -f "$repo/Cargo.lock" ]] && locked=(--locked)
step "building: cargo build --release ${locked[*]:+${locked[*]} }--workspace --bins (in $repo)"
(cd "$repo" && "$cargo" build --release ${locked[@]+"${locked[@]}"} --workspace --bins) ||
    die "the build failed (see the cargo output above)"
target_dir=$(cd "$repo" && "$cargo" metadata --format-version 1 --no-deps 2>/dev/null |
    grep -o '"target_directory":"[^"]*"' | head -n 1 | cut -d'"' -f4) || true
[[ -n "$target_dir" && -d "$target_dir" ]] || target_dir="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target_dir" == /* ]] || target_dir="$repo/$target_dir"
release="$target_dir/release"
[[ -f "$release/ai" ]] || die "the build did not produce $release/ai"

# --- 3. binaries ---------------------------------------------------------------------
bin_names=()
for name in ai ai-inject ai-capture ai-compact; do
    [[ -f "$release/$name" ]] && bin_names+=("$name")
done
# The folders this install creates, outermost first.
new_dirs=()
d="$prefix_abs/bin"
while [[ ! -e "$d" ]]; do
    new_dirs=("$d" ${new_dirs[@]+"${new_dirs[@]}"})
    d=$(dirname -- "$d")
done
mkdir -p -- "$prefix_abs/bin" || die "cannot create $prefix_abs/bin"
prefix=$(canonical "$prefix_abs")
bin_dir="$prefix/bin"
created_dirs=()
for d in ${new_dirs[@]+"${new_dirs[@]}"}; do created_dirs+=("$(canonical "$d")"); done

manifest=$(manifest_for "$project")
old_prefix=$(manifest_value "$manifest" prefix)
# Folders an earlier install into this prefix created (this project's or another's) stay
# recorded, so whichever --uninstall removes the binaries last also removes them.
old_dirs=()
if [[ -d "$installs_dir" ]]; then
    for f in "$installs_dir"/*.manifest; do
        [[ -f "$f" && "$(manifest_value "$f" prefix)" == "$prefix" ]] || continue
        while IFS= read -r line; do old_dirs+=("$line"); done < <(manifest_values "$f" created_dir)
    done
fi
created_dirs=(${old_dirs[@]+"${old_dirs[@]}"} ${created_dirs[@]+"${created_dirs[@]}"})

# Never overwrite a file that is not ours: a different file, recorded by no install.
for name in "${bin_names[@]}"; do
    dest="$bin_dir/$name"
    if [[ -e "$dest" ]] && ! cmp -s -- "$release/$name" "$dest" && ! recorded_binary "$prefix" "$name"; then
        die "$dest exists and was not installed by ai-smartness: move it away or choose another --prefix"
    fi
done

step "installing ${bin_names[*]} into $bin_dir"
ai_changed=no report=()
for name in "${bin_names[@]}"; do
    src="$release/$name" dest="$bin_dir/$name"
    if [[ -f "$dest" ]] && cmp -s -- "$src" "$dest"; then
        [[ -x "$dest" ]] || chmod 0755 -- "$dest"
        report+=("$name: unchanged")
        continue
    fi
    state=installed
    if [[ -e "$dest" ]]; then
        state=updated
        [[ "$name" == ai ]] && ai_changed=yes
    fi
    # Copy then rename: a hook never runs a half-written file, and a running
    # daemon keeps its old file.
    tmp="$bin_dir/.$name.tmp.$$"
    tmp_files+=("$tmp")
    install -m 0755 -- "$src" "$tmp" || die "cannot write $tmp"
    mv -f -- "$tmp" "$dest" || die "cannot install $dest"
    report+=("$name: $state")
done
say "$(join "${report[@]}")"

# --- 4. install record (written now, so --uninstall can undo even a failed install) ---
if [[ -n "$old_prefix" && "$old_prefix" != "$prefix" ]]; then
    step "this project was installed into $old_prefix before: removing that install's binaries"
    ai_changed=yes # a daemon running from there restarts on the new binary
    moved="$manifest.old.$$"
    tmp_files+=("$moved")
    cp -- "$manifest" "$moved"
    rm -f -- "$manifest"
    # An earlier install into the same prefix (this one) counts as another user.
    remove_binaries_of "$moved"
fi
content="# ai-smartness install record: written by install.sh, read by install.sh --uninstall
project=$project
prefix=$prefix"
for name in "${bin_names[@]}"; do content+=$'\n'"bin=$name"; done
[[ "$plugin" == yes ]] && content+=$'\n'"plugin=$plugin_id"
# Outermost first (they are all ancestors of the bin folder), each once.
while IFS= read -r d; do
    [[ -n "$d" ]] && content+=$'\n'"created_dir=$d"
done < <(if ((${#created_dirs[@]} > 0)); then printf '%s\n' "${created_dirs[@]}" | sort -u | awk '{ print length($0) "\t" $0 }' | sort -n | cut -f2-; fi)
write_if_changed "$manifest" "$content"
if [[ "$written" == yes ]]; then step "recorded the install in $manifest"; else step "install record $manifest unchanged"; fi

ai="$bin_dir/ai"

# --- 5. model assets ------------------------------------------------------------------
step "fetching the embedding model and ONNX Runtime (scripts/fetch-assets.sh)"
if ! "$repo/scripts/fetch-assets.sh"; then
    warn "fetching the model failed: embeddings will run degraded (hashed TF-IDF) until" \
        "'$repo/scripts/fetch-assets.sh' succeeds; everything else works. Continuing."
fi

# --- 6. .ai/ ---------------------------------------------------------------------------
if ((${#init_flags[@]} > 0)); then
    step "initialising $project/.ai: ai init ${init_flags[*]}"
else
    step "initialising $project/.ai: ai init (keeping the project's current mode and language)"
fi
"$ai" init --project "$project" ${init_flags[@]+"${init_flags[@]}"} || die "ai init failed (see above)"

# --- 7. hooks (or the plugin) ------------------------------------------------------------
if [[ "$plugin" == yes ]]; then
    step "registering the Claude Code plugin $plugin_id (user scope)"
    # The plugin's hooks and MCP server find the binaries here.
    write_if_changed "$data_dir/plugin-bin-dir" "$bin_dir"
    out=$("$ai" hooks uninstall --project "$project") || die "ai hooks uninstall failed (see above)"
    case "$out" in
    unchanged:*) ;;
    *) say "removed the hooks an earlier install wrote in $project/.claude/settings.json (the plugin's replace them)" ;;
    esac
    if claude=$(command -v claude); then
        "$claude" plugin marketplace add "$repo" >/dev/null || die "claude plugin marketplace add $repo failed"
        "$claude" plugin install "$plugin_id" --scope user >/dev/null || die "claude plugin install $plugin_id failed"
        say "installed $plugin_id from $repo (hooks, MCP server, commands)"
    else
        warn "no claude on PATH: register the plugin yourself: claude plugin marketplace add $repo; claude plugin install $plugin_id"
    fi
fi
if [[ "$plugin" == no ]]; then
step "registering the Claude Code hooks in $project/.claude/settings.json"
settings="$project/.claude/settings.json"
backup=$(settings_backup_for "$manifest")
before=""
if [[ -f "$settings" && ! -f "$backup" ]]; then
    before="$backup.tmp.$$"
    tmp_files+=("$before")
    cp -- "$settings" "$before" || die "cannot copy $settings to $before"
fi
out=$("$ai" hooks install --project "$project" --bin-dir "$bin_dir") || die "ai hooks install failed (see above)"
case "$out" in
unchanged:*) say "already registered: settings unchanged" ;;
*)
    say "merged our hook entries (every other setting is kept)"
    if [[ -n "$before" ]]; then
        mv -f -- "$before" "$backup"
        say "kept the original file as $backup, to restore it byte for byte on --uninstall"
    fi
    ;;
esac
missing=()
for name in ai-inject ai-capture ai-compact; do [[ -x "$bin_dir/$name" ]] || missing+=("$name"); done
if ((${#missing[@]} > 0)); then
    warn "this build has no $(join "${missing[@]}"): the hooks that run them will fail until an install provides them"
fi
fi

# --- 8. daemon -------------------------------------------------------------------------
running=0
"$ai" --project "$project" daemon status >/dev/null 2>&1 || running=$?
if [[ "$no_start" == yes ]]; then
    step "not starting the daemon (--no-start); start it with: $ai --project $project daemon start"
    if ((running == 0)) && [[ "$ai_changed" == yes ]]; then
        warn "a daemon of the previous version is running; restart it: $ai --project $project daemon restart"
    fi
elif ((running == 0)) && [[ "$ai_changed" == yes ]]; then
    step "restarting the daemon on the new version"
    "$ai" --project "$project" daemon restart || die "the daemon did not restart (see $project/.ai/daemon_stderr.log)"
else
    step "starting the daemon"
    "$ai" --project "$project" daemon start || die "the daemon did not start (see $project/.ai/daemon_stderr.log)"
fi

# --- 9. summary ------------------------------------------------------------------------
case ":$PATH:" in
*":$bin_dir:"* | *":$prefix_abs/bin:"*) ;;
*) warn "$bin_dir is not on your PATH (the hooks use full paths, so they work anyway); to run 'ai' add this to your shell profile:
    export PATH=\"$bin_dir:\$PATH\"" ;;
esac
if [[ "$no_start" == yes ]]; then
    step "status: $("$ai" --project "$project" daemon status 2>&1 || true)"
else
    step "status (ai --project $project status):"
    "$ai" --project "$project" status || die "the daemon does not answer (see $project/.ai/processor.log)"
fi
step "done: ai-smartness is installed for $project (uninstall: $repo/install.sh $project --uninstall)"
