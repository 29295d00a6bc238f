from .cli import finish, main

finish(main())
