# Completes command lines with fish's own `complete -C`, with the
# thpctl.fish and thpd.fish of COMPLETION_DIR (and no installed ones) and
# fish's own completions for other commands.
# Prints "## LINE" and then one match a line (without its description).
# usage: fish --no-config fish_complete.fish COMPLETION_DIR < LINES
set -g fish_complete_path $__fish_data_dir/completions
source $argv[1]/thpctl.fish; or exit 1
source $argv[1]/thpd.fish; or exit 1
while read -l line
    echo "## $line"
    for m in (complete -C "$line")
        string split -f1 \t -- $m
    end
end
