from pyk8s.cli import main

main()
