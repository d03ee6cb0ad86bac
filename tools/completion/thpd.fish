# fish completion for thpd(8): its options and their file and directory
# arguments.  Installed as vendor_completions.d/thpd.fish; tests/completion/
# checks it against `thpd --help`.
complete -c thpd -f
complete -c thpd -s c -l config -r -F -d 'the configuration file'
complete -c thpd -s d -l config-dir -x -a '(__fish_complete_directories)' -d 'a directory of rule files'
complete -c thpd -s s -l socket -r -F -d 'the status socket'
complete -c thpd -s m -l metrics-file -r -F -d 'the metrics file'
complete -c thpd -s l -l listen -x -d 'HOST:PORT of the metrics endpoint'
complete -c thpd -s i -l interval -x -d 'milliseconds between scans'
complete -c thpd -l once -d 'one scan, then exit'
complete -c thpd -l check-config -d 'check the configuration, then exit'
complete -c thpd -l verbose -d 'log each decision'
complete -c thpd -s h -l help -d 'show the help'
