# Basil.psm1: Basil's REST API for PowerShell and PowerCLI users. Every cmdlet is a thin wrapper of one
# or two REST calls (/api/v1/...) made by Invoke-BasilApi; results become typed objects (Basil.Pod,
# Basil.Plan, ...) whose fields are mapped from Basil's OpenAPI schemas in $script:BasilTypes, so
# tests/powershell can check every path, body field and mapped field against the OpenAPI document.

Set-StrictMode -Version 3.0

$script:BasilConnection = $null

# Output types: for each, the OpenAPI component schema it comes from and its properties (PowerShell
# name = Basil's field name).
$script:BasilTypes = @{
    'Basil.Pod'            = @{
        Schema = 'Pod'
        Fields = [ordered]@{ Name = 'name'; Imbalance = 'imbalance'; Threshold = 'threshold'; Mode = 'mode'; VCenter = 'vcenter'; Datastores = 'datastores' }
    }
    'Basil.Datastore'      = @{
        Schema = 'DatastoreSummary'
        Fields = [ordered]@{ Id = 'id'; Name = 'name'; Pod = 'pod'; NormalizedLoad = 'normalized_load'; P = 'P'; LatencyMs = 'latency_ms'; Iops = 'iops'; CapacityGB = 'capacity_gb'; FreeGB = 'free_gb' }
    }
    'Basil.Recommendation' = @{
        Schema = 'Recommendation'
        Fields = [ordered]@{ Id = 'id'; Pod = 'pod'; CreatedAt = 'created_at'; Before = 'before'; After = 'after'; Moves = 'moves' }
    }
    'Basil.Move'           = @{
        Schema = 'Move'
        Fields = [ordered]@{ Id = 'id'; Disk = 'disk'; VM = 'vm'; From = 'from'; To = 'to'; SizeGB = 'size_gb'; State = 'state'; Progress = 'progress'; Reason = 'reason'; Message = 'message' }
    }
    'Basil.Plan'           = @{
        Schema = 'Plan'
        Fields = [ordered]@{ Id = 'id'; Pod = 'pod'; State = 'state'; Progress = 'progress'; RecommendationId = 'recommendation_id'; CreatedAt = 'created_at'; UpdatedAt = 'updated_at'; Moves = 'moves' }
    }
    'Basil.Pool'           = @{
        Schema = 'PoolTree'
        Fields = [ordered]@{ Name = 'name'; Datastore = 'datastore'; Version = 'version'; Root = 'root'; Pools = 'pools' }
    }
    'Basil.Placement'      = @{
        Schema = 'PlacementResult'
        Fields = [ordered]@{ Pod = 'pod'; Ranked = 'ranked'; Excluded = 'excluded' }
    }
    'Basil.JobRun'         = @{
        Schema = 'JobRun'
        Fields = [ordered]@{ Id = 'id'; Job = 'job'; Outcome = 'outcome'; Started = 'started'; Finished = 'finished'; Message = 'message'; Details = 'details' }
    }
}

function ConvertTo-BasilObject {
    # One API answer as an object of the given Basil type (nested moves and datastores typed too).
    [CmdletBinding()]
    [OutputType([psobject])]
    param(
        [Parameter(Mandatory, ValueFromPipeline)]
        [AllowNull()]
        [object]$InputObject,

        [Parameter(Mandatory)]
        [string]$TypeName
    )
    process {
        if ($null -eq $InputObject) {
            return
        }
        $type = $script:BasilTypes[$TypeName]
        $out = [ordered]@{ PSTypeName = $TypeName }
        foreach ($entry in $type.Fields.GetEnumerator()) {
            $property = $InputObject.PSObject.Properties[$entry.Value]
            $out[$entry.Key] = if ($null -ne $property) { $property.Value } else { $null }
        }
        if ($out.Contains('Moves') -and $null -ne $out['Moves']) {
            $out['Moves'] = @($out['Moves'] | ConvertTo-BasilObject -TypeName 'Basil.Move')
        }
        if ($out.Contains('Datastores') -and $null -ne $out['Datastores']) {
            $out['Datastores'] = @($out['Datastores'] | ConvertTo-BasilObject -TypeName 'Basil.Datastore')
        }
        [pscustomobject]$out
    }
}

function ConvertTo-BasilSegment {
    # One path segment, percent-encoded (pod and pool names may hold any character).
    [CmdletBinding()]
    [OutputType([string])]
    param([Parameter(Mandatory)][string]$Value)
    [uri]::EscapeDataString($Value)
}

function Get-BasilConnection {
    # The connection of Connect-Basil, or a clear error when there is none.
    [CmdletBinding()]
    [OutputType([psobject])]
    param()
    if ($null -eq $script:BasilConnection) {
        throw 'Not connected to Basil: run Connect-Basil -Uri https://basil.example.com:8443 -Token (Read-Host -AsSecureString) first.'
    }
    $script:BasilConnection
}

function Invoke-BasilApi {
    # One REST call to /api/v1 + Path. Basil's errors become terminating errors that carry its status,
    # its message and every problem with its field.
    [CmdletBinding()]
    [OutputType([psobject])]
    param(
        [Parameter(Mandatory)]
        [ValidateSet('Get', 'Post', 'Put', 'Delete')]
        [string]$Method,

        [Parameter(Mandatory)]
        [string]$Path,

        [hashtable]$Body,

        [hashtable]$Query
    )
    $connection = Get-BasilConnection
    $uri = $connection.Uri.TrimEnd('/') + '/api/v1' + $Path
    if ($Query -and $Query.Count -gt 0) {
        $pairs = foreach ($key in $Query.Keys) {
            '{0}={1}' -f [uri]::EscapeDataString($key), [uri]::EscapeDataString([string]$Query[$key])
        }
        $uri += '?' + ($pairs -join '&')
    }
    $headers = @{ Accept = 'application/json' }
    if ($null -ne $connection.Token) {
        $headers['Authorization'] = 'Bearer ' + [System.Net.NetworkCredential]::new('', $connection.Token).Password
    }
    else {
        $headers['X-Basil-VC-Session'] = [System.Net.NetworkCredential]::new('', $connection.VCSession).Password
        $headers['X-Basil-VC-Server'] = $connection.VCServer
    }
    $request = @{ Uri = $uri; Method = $Method; Headers = $headers; ErrorAction = 'Stop' }
    if ($PSBoundParameters.ContainsKey('Body')) {
        $request['Body'] = ConvertTo-Json -InputObject $Body -Depth 20 -Compress
        $request['ContentType'] = 'application/json'
    }
    if ($connection.SkipCertificateCheck) {
        $request['SkipCertificateCheck'] = $true
    }
    try {
        Invoke-RestMethod @request
    }
    catch {
        $status = $null
        if ($_.Exception.PSObject.Properties['Response'] -and $null -ne $_.Exception.Response) {
            $status = [int]$_.Exception.Response.StatusCode
        }
        $message = $_.Exception.Message
        $problems = @()
        if ($_.ErrorDetails -and $_.ErrorDetails.Message) {
            try {
                $answer = $_.ErrorDetails.Message | ConvertFrom-Json -ErrorAction Stop
                if ($answer.PSObject.Properties['message']) {
                    $message = 'Basil says: ' + $answer.message
                }
                if ($answer.PSObject.Properties['problems'] -and $answer.problems) {
                    $problems = @($answer.problems | ForEach-Object { '{0}: {1}' -f $_.field, $_.message })
                }
            }
            catch {
                $message = $_.Exception.Message
            }
        }
        $text = '{0} {1}: HTTP {2}: {3}' -f $Method.ToUpperInvariant(), $Path, $status, $message
        if ($problems.Count -gt 0) {
            $text += '; ' + ($problems -join '; ')
        }
        $record = [System.Management.Automation.ErrorRecord]::new(
            [System.InvalidOperationException]::new($text), "Basil.Http$status",
            [System.Management.Automation.ErrorCategory]::InvalidOperation, $Path)
        $PSCmdlet.ThrowTerminatingError($record)
    }
}

function Connect-Basil {
    <#
    .SYNOPSIS
    Connects to a Basil service for the other Basil cmdlets of this session.

    .DESCRIPTION
    Keeps Basil's address and credentials for this PowerShell session and checks them with GET /api/v1/me.
    Authenticate with an API token (basil token create NAME --role operator), or reuse a PowerCLI session:
    with -VIServer (or when neither -Token nor -VCSession is given and PowerCLI's $global:DefaultVIServer is
    connected) the vCenter session's secret is sent as X-Basil-VC-Session, and Basil maps the user's vSphere
    privileges to a role.

    TLS certificates are verified. Trust Basil's certificate (or its CA) in the system store; only for a lab,
    -SkipCertificateCheck (PowerShell 7) turns verification off.

    .PARAMETER Uri
    Basil's address, for example https://basil.example.com:8443.

    .PARAMETER Token
    An API token as a SecureString.

    .PARAMETER VIServer
    A PowerCLI connection (Connect-VIServer's result) whose session to reuse.

    .PARAMETER VCSession
    A vCenter session token as a SecureString (instead of -VIServer), with -VCServer.

    .PARAMETER VCServer
    The vCenter the session belongs to: its name in Basil's configuration or host[:port].

    .PARAMETER SkipCertificateCheck
    Do not verify Basil's certificate (PowerShell 7; for labs only).

    .EXAMPLE
    Connect-Basil -Uri https://basil.example.com:8443 -Token (Read-Host -AsSecureString 'Basil token')

    .EXAMPLE
    Connect-VIServer vcenter.example.com
    Connect-Basil -Uri https://basil.example.com:8443 -VIServer $global:DefaultVIServer

    .OUTPUTS
    Basil.Connection
    #>
    [CmdletBinding(DefaultParameterSetName = 'Token')]
    [OutputType('Basil.Connection')]
    param(
        [Parameter(Mandatory, Position = 0)]
        [ValidatePattern('^https?://')]
        [string]$Uri,

        [Parameter(ParameterSetName = 'Token')]
        [securestring]$Token,

        [Parameter(Mandatory, ParameterSetName = 'VIServer', ValueFromPipeline)]
        [psobject]$VIServer,

        [Parameter(Mandatory, ParameterSetName = 'Session')]
        [securestring]$VCSession,

        [Parameter(Mandatory, ParameterSetName = 'Session')]
        [string]$VCServer,

        [switch]$SkipCertificateCheck
    )
    process {
        $session = $null
        $server = $null
        if ($PSCmdlet.ParameterSetName -eq 'Session') {
            $session = $VCSession
            $server = $VCServer
        }
        elseif ($PSCmdlet.ParameterSetName -eq 'VIServer' -or -not $Token) {
            if (-not $VIServer) {
                $VIServer = Get-Variable -Name DefaultVIServer -Scope Global -ValueOnly -ErrorAction SilentlyContinue
            }
            if (-not $VIServer) {
                throw 'Token: give -Token, -VIServer or -VCSession (or connect PowerCLI with Connect-VIServer first).'
            }
            $session = ConvertTo-SecureString -String $VIServer.SessionSecret -AsPlainText -Force
            $server = $VIServer.Name
        }
        $script:BasilConnection = [pscustomobject]@{
            PSTypeName           = 'Basil.Connection'
            Uri                  = $Uri.TrimEnd('/')
            Token                = if ($null -eq $session) { $Token } else { $null }
            VCSession            = $session
            VCServer             = $server
            SkipCertificateCheck = [bool]$SkipCertificateCheck
            User                 = $null
            Role                 = $null
            Via                  = $null
        }
        try {
            $me = Invoke-BasilApi -Method Get -Path '/me'
        }
        catch {
            $script:BasilConnection = $null
            throw
        }
        $script:BasilConnection.User = $me.name
        $script:BasilConnection.Role = $me.role
        $script:BasilConnection.Via = $me.via
        $script:BasilConnection
    }
}

function Get-BasilPod {
    <#
    .SYNOPSIS
    Gets Basil's pods with their imbalance and their datastores' load.

    .DESCRIPTION
    Each pod (datastore cluster) Basil balances, with its imbalance f = sigma/mu of the datastores'
    normalized loads and its threshold; each datastore with its normalized load N, P, latency and IOPS.

    .PARAMETER Name
    One pod's name; every pod when left out.

    .EXAMPLE
    Get-BasilPod

    .EXAMPLE
    Get-BasilPod -Name gold | Select-Object -ExpandProperty Datastores | Sort-Object NormalizedLoad -Descending

    .OUTPUTS
    Basil.Pod
    #>
    [CmdletBinding()]
    [OutputType('Basil.Pod')]
    param(
        [Parameter(Position = 0, ValueFromPipelineByPropertyName)]
        [string]$Name
    )
    process {
        if ($Name) {
            Invoke-BasilApi -Method Get -Path "/pods/$(ConvertTo-BasilSegment $Name)" | ConvertTo-BasilObject -TypeName 'Basil.Pod'
        }
        else {
            Invoke-BasilApi -Method Get -Path '/pods' | ForEach-Object { $_ } | ConvertTo-BasilObject -TypeName 'Basil.Pod'
        }
    }
}

function Get-BasilRecommendation {
    <#
    .SYNOPSIS
    Gets (or computes) a pod's recommended Storage vMotions.

    .DESCRIPTION
    The pod's latest recommendation with its moves and the imbalance before and after. With -Compute,
    Basil runs a balancing round now on the pod's current models (operator role); nothing moves until a
    plan is applied.

    .PARAMETER Pod
    The pod's name (Name of a Basil.Pod from the pipeline).

    .PARAMETER Compute
    Compute a recommendation now instead of reading the latest one.

    .EXAMPLE
    Get-BasilRecommendation -Pod gold -Compute

    .EXAMPLE
    Get-BasilPod | Get-BasilRecommendation | Select-Object -ExpandProperty Moves

    .OUTPUTS
    Basil.Recommendation
    #>
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'Low')]
    [OutputType('Basil.Recommendation')]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipelineByPropertyName)]
        [Alias('Name')]
        [string]$Pod,

        [switch]$Compute
    )
    process {
        $path = "/pods/$(ConvertTo-BasilSegment $Pod)/recommendations"
        if ($Compute) {
            if ($PSCmdlet.ShouldProcess("pod $Pod", 'Compute a recommendation')) {
                Invoke-BasilApi -Method Post -Path "/pods/$(ConvertTo-BasilSegment $Pod)/recommendations" | ConvertTo-BasilObject -TypeName 'Basil.Recommendation'
            }
        }
        else {
            Invoke-BasilApi -Method Get -Path $path | ConvertTo-BasilObject -TypeName 'Basil.Recommendation'
        }
    }
}

function New-BasilPlan {
    <#
    .SYNOPSIS
    Creates a plan (state proposed) from a recommendation.

    .DESCRIPTION
    Makes the recommendation, or the pod's latest one with -Pod, into a plan that can be approved and applied.
    When Basil answers 409 the recommendation can no longer be planned (for example it is stale because the
    pod changed); compute a new one with Get-BasilRecommendation -Compute.

    .PARAMETER RecommendationId
    The recommendation's id (Id of a Basil.Recommendation from the pipeline).

    .PARAMETER Pod
    Plan the pod's latest recommendation.

    .EXAMPLE
    Get-BasilRecommendation -Pod gold -Compute | New-BasilPlan

    .EXAMPLE
    New-BasilPlan -Pod gold -WhatIf

    .OUTPUTS
    Basil.Plan
    #>
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'Low', DefaultParameterSetName = 'Recommendation')]
    [OutputType('Basil.Plan')]
    param(
        [Parameter(Mandatory, ParameterSetName = 'Recommendation', ValueFromPipelineByPropertyName)]
        [Alias('Id')]
        [string]$RecommendationId,

        [Parameter(Mandatory, ParameterSetName = 'Pod')]
        [string]$Pod
    )
    process {
        if ($PSCmdlet.ParameterSetName -eq 'Pod') {
            $RecommendationId = [string](Invoke-BasilApi -Method Get -Path "/pods/$(ConvertTo-BasilSegment $Pod)/recommendations").id
        }
        if ($PSCmdlet.ShouldProcess("recommendation $RecommendationId", 'Create a plan')) {
            try {
                Invoke-BasilApi -Method Post -Path '/plans' -Body @{ recommendation_id = $RecommendationId } | ConvertTo-BasilObject -TypeName 'Basil.Plan'
            }
            catch {
                if ($_.FullyQualifiedErrorId -like 'Basil.Http409*') {
                    throw "Recommendation $RecommendationId can no longer be planned ($($_.Exception.Message)). Compute a new one: Get-BasilRecommendation -Pod <pod> -Compute | New-BasilPlan"
                }
                throw
            }
        }
    }
}

function Approve-BasilPlan {
    <#
    .SYNOPSIS
    Approves a proposed plan; Basil's next rebalance window applies it.

    .DESCRIPTION
    proposed -> approved. Use Start-BasilPlan to apply it now instead.

    .PARAMETER Id
    The plan's id (Id of a Basil.Plan from the pipeline).

    .EXAMPLE
    Get-BasilRecommendation -Pod gold -Compute | New-BasilPlan | Approve-BasilPlan

    .OUTPUTS
    Basil.Plan
    #>
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'Medium')]
    [OutputType('Basil.Plan')]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipelineByPropertyName)]
        [int]$Id
    )
    process {
        if ($PSCmdlet.ShouldProcess("plan $Id", 'Approve')) {
            Invoke-BasilApi -Method Post -Path "/plans/$Id/approve" | ConvertTo-BasilObject -TypeName 'Basil.Plan'
        }
    }
}

function Start-BasilPlan {
    <#
    .SYNOPSIS
    Applies a plan now: its Storage vMotions start, within vSphere's concurrency limits.

    .DESCRIPTION
    approved (or proposed, which Basil approves) -> running. Follow it with Wait-BasilPlan.

    .PARAMETER Id
    The plan's id (Id of a Basil.Plan from the pipeline).

    .EXAMPLE
    New-BasilPlan -Pod gold | Start-BasilPlan | Wait-BasilPlan

    .EXAMPLE
    Start-BasilPlan -Id 7 -Confirm

    .OUTPUTS
    Basil.Plan
    #>
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'High')]
    [OutputType('Basil.Plan')]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipelineByPropertyName)]
        [int]$Id
    )
    process {
        if ($PSCmdlet.ShouldProcess("plan $Id", 'Apply (Storage vMotion its disks)')) {
            Invoke-BasilApi -Method Post -Path "/plans/$Id/apply" | ConvertTo-BasilObject -TypeName 'Basil.Plan'
        }
    }
}

function Wait-BasilPlan {
    <#
    .SYNOPSIS
    Waits until a plan has succeeded, failed or been cancelled.

    .DESCRIPTION
    Reads the plan every -PollSeconds and shows its progress; returns the finished plan with each move's
    outcome. Fails after -TimeoutSeconds.

    .PARAMETER Id
    The plan's id (Id of a Basil.Plan from the pipeline).

    .PARAMETER TimeoutSeconds
    How long to wait.

    .PARAMETER PollSeconds
    Seconds between two reads.

    .EXAMPLE
    Start-BasilPlan -Id 7 | Wait-BasilPlan -TimeoutSeconds 7200 | Select-Object -ExpandProperty Moves

    .OUTPUTS
    Basil.Plan
    #>
    [CmdletBinding()]
    [OutputType('Basil.Plan')]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipelineByPropertyName)]
        [int]$Id,

        [ValidateRange(1, 604800)]
        [int]$TimeoutSeconds = 3600,

        [ValidateRange(1, 3600)]
        [int]$PollSeconds = 5
    )
    process {
        $deadline = (Get-Date).AddSeconds($TimeoutSeconds)
        while ($true) {
            $plan = Invoke-BasilApi -Method Get -Path "/plans/$Id" | ConvertTo-BasilObject -TypeName 'Basil.Plan'
            if ($plan.State -in @('succeeded', 'failed', 'cancelled')) {
                Write-Progress -Activity "Basil plan $Id" -Completed
                if ($plan.State -eq 'failed') {
                    Write-Warning "Plan $Id failed: $(@($plan.Moves | Where-Object State -EQ 'failed').Count) move(s) failed."
                }
                return $plan
            }
            $percent = if ($null -ne $plan.Progress) { [int]$plan.Progress } else { 0 }
            Write-Progress -Activity "Basil plan $Id" -Status $plan.State -PercentComplete $percent
            if ((Get-Date) -ge $deadline) {
                throw "Plan ${Id}: still $($plan.State) after $TimeoutSeconds s."
            }
            Start-Sleep -Seconds $PollSeconds
        }
    }
}

function Stop-BasilPlan {
    <#
    .SYNOPSIS
    Cancels a plan: a running move finishes, no new move starts.

    .DESCRIPTION
    proposed, approved or running -> cancelled.

    .PARAMETER Id
    The plan's id (Id of a Basil.Plan from the pipeline).

    .EXAMPLE
    Stop-BasilPlan -Id 7

    .EXAMPLE
    $plan = New-BasilPlan -Pod gold | Start-BasilPlan -Confirm:$false
    $plan | Stop-BasilPlan -Confirm:$false | Wait-BasilPlan

    .OUTPUTS
    Basil.Plan
    #>
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'Medium')]
    [OutputType('Basil.Plan')]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipelineByPropertyName)]
        [int]$Id
    )
    process {
        if ($PSCmdlet.ShouldProcess("plan $Id", 'Cancel')) {
            Invoke-BasilApi -Method Post -Path "/plans/$Id/cancel" | ConvertTo-BasilObject -TypeName 'Basil.Plan'
        }
    }
}

function Get-BasilPool {
    <#
    .SYNOPSIS
    Gets Basil's Storage Resource Pool trees.

    .DESCRIPTION
    Each tree with its datastore, root controls, pools and version (Set-BasilPool sends the version back).

    .PARAMETER Name
    One tree's name; every tree when left out.

    .EXAMPLE
    Get-BasilPool

    .EXAMPLE
    Get-BasilPool -Name lun6-pools | ConvertTo-Json -Depth 10

    .OUTPUTS
    Basil.Pool
    #>
    [CmdletBinding()]
    [OutputType('Basil.Pool')]
    param(
        [Parameter(Position = 0, ValueFromPipelineByPropertyName)]
        [string]$Name
    )
    process {
        if ($Name) {
            Invoke-BasilApi -Method Get -Path "/pools/$(ConvertTo-BasilSegment $Name)" | ConvertTo-BasilObject -TypeName 'Basil.Pool'
        }
        else {
            Invoke-BasilApi -Method Get -Path '/pools' | ForEach-Object { $_ } | ConvertTo-BasilObject -TypeName 'Basil.Pool'
        }
    }
}

function Set-BasilPool {
    <#
    .SYNOPSIS
    Creates or replaces a Storage Resource Pool tree.

    .DESCRIPTION
    Basil validates the tree first (POST /api/v1/pools/validate); every problem is reported with its field,
    for example pools[0].children[1].vm, and nothing is saved. A new tree is created; an existing one is
    replaced with the version read, so a concurrent change fails (409) instead of being overwritten.

    .PARAMETER Name
    The tree's name.

    .PARAMETER Datastore
    The datastore's name or managed object id.

    .PARAMETER Root
    The root's controls: reservation, limit (IOPS or 'unlimited'), shares (number or low/normal/high).

    .PARAMETER Pools
    The pools under the root: hashtables with name/children, vm (and disk) leaves or tag leaves.

    .PARAMETER Sioc
    Enable Storage IO Control on the datastore.

    .EXAMPLE
    Set-BasilPool -Name lun6-pools -Datastore 6diskLUN -Sioc -Root @{ reservation = 1000; limit = 'unlimited' } -Pools @(
        @{ name = 'gold'; shares = 'high'; children = @(@{ vm = 'oltp-1'; reservation = 400 }) }
    ) -WhatIf

    .OUTPUTS
    Basil.Pool
    #>
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'Medium')]
    [OutputType('Basil.Pool')]
    param(
        [Parameter(Mandatory, Position = 0)]
        [string]$Name,

        [Parameter(Mandatory)]
        [string]$Datastore,

        [hashtable]$Root,

        [hashtable[]]$Pools,

        [switch]$Sioc
    )
    $body = @{ name = $Name; datastore = $Datastore; sioc = [bool]$Sioc }
    if ($Root) {
        $body['root'] = $Root
    }
    if ($Pools) {
        $body['pools'] = @($Pools)
    }
    $check = Invoke-BasilApi -Method Post -Path '/pools/validate' -Body $body
    if (-not $check.valid) {
        $problems = @($check.problems | ForEach-Object { '{0}: {1}' -f $_.field, $_.message })
        throw "Pool tree ${Name} is invalid: $($problems -join '; ')"
    }
    $current = $null
    try {
        $current = Invoke-BasilApi -Method Get -Path "/pools/$(ConvertTo-BasilSegment $Name)"
    }
    catch {
        if ($_.FullyQualifiedErrorId -notlike 'Basil.Http404*') {
            throw
        }
    }
    if ($null -eq $current) {
        if ($PSCmdlet.ShouldProcess("pool tree $Name on $Datastore", 'Create')) {
            Invoke-BasilApi -Method Post -Path '/pools' -Body $body | ConvertTo-BasilObject -TypeName 'Basil.Pool'
        }
    }
    elseif ($PSCmdlet.ShouldProcess("pool tree $Name on $Datastore (version $($current.version))", 'Replace')) {
        $body['version'] = $current.version
        Invoke-BasilApi -Method Put -Path "/pools/$(ConvertTo-BasilSegment $Name)" -Body $body | ConvertTo-BasilObject -TypeName 'Basil.Pool'
    }
}

function Get-BasilPlacement {
    <#
    .SYNOPSIS
    Ranks a pod's datastores for a new virtual disk.

    .DESCRIPTION
    Where a new disk with this size and expected workload should go (BASIL's initial placement): the
    datastores ranked by the normalized load the disk would give them, and the ones left out with the
    reason. Nothing is created or moved.

    .PARAMETER Pod
    The pod's name.

    .PARAMETER SizeGB
    The disk's size in GB.

    .PARAMETER Oio
    Expected outstanding IOs.

    .PARAMETER IoSizeKB
    Expected IO size in KB.

    .PARAMETER ReadPercent
    Expected share of reads, 0 to 100.

    .PARAMETER RandomPercent
    Expected share of random IO, 0 to 100.

    .EXAMPLE
    $best = (Get-BasilPlacement -Pod gold -SizeGB 40 -Oio 16 -IoSizeKB 8 -ReadPercent 70 -RandomPercent 100).Ranked[0]
    New-HardDisk -VM (Get-VM oltp-3) -CapacityGB 40 -Datastore (Get-Datastore $best.datastore_name)

    .OUTPUTS
    Basil.Placement
    #>
    [CmdletBinding()]
    [OutputType('Basil.Placement')]
    param(
        [Parameter(Mandatory)]
        [string]$Pod,

        [Parameter(Mandatory)]
        [double]$SizeGB,

        [Parameter(Mandatory)]
        [double]$Oio,

        [Parameter(Mandatory)]
        [double]$IoSizeKB,

        [Parameter(Mandatory)]
        [ValidateRange(0, 100)]
        [double]$ReadPercent,

        [Parameter(Mandatory)]
        [ValidateRange(0, 100)]
        [double]$RandomPercent
    )
    $request = @{
        pod        = $Pod
        size_gb    = $SizeGB
        oio        = $Oio
        io_size_kb = $IoSizeKB
        read_pct   = $ReadPercent
        random_pct = $RandomPercent
    }
    Invoke-BasilApi -Method Post -Path '/placement' -Body $request | ConvertTo-BasilObject -TypeName 'Basil.Placement'
}

function Start-BasilJob {
    <#
    .SYNOPSIS
    Runs one of Basil's scheduled jobs now (admin role).

    .DESCRIPTION
    Hands the job (collect, model, recommend, srp, ...; see GET /api/v1/jobs) to Basil's scheduler. With
    -Wait, follows the run until it succeeded, failed or was skipped.

    .PARAMETER Id
    The job's id.

    .PARAMETER Wait
    Wait for the run's outcome.

    .PARAMETER TimeoutSeconds
    How long to wait.

    .EXAMPLE
    Start-BasilJob -Id collect -Wait

    .EXAMPLE
    'collect', 'model' | Start-BasilJob -Wait | Format-Table Job, Outcome, Finished

    .OUTPUTS
    Basil.JobRun
    #>
    [CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'Low')]
    [OutputType('Basil.JobRun')]
    param(
        [Parameter(Mandatory, Position = 0, ValueFromPipeline, ValueFromPipelineByPropertyName)]
        [string]$Id,

        [switch]$Wait,

        [ValidateRange(1, 86400)]
        [int]$TimeoutSeconds = 1800
    )
    process {
        if (-not $PSCmdlet.ShouldProcess("job $Id", 'Run now')) {
            return
        }
        $run = Invoke-BasilApi -Method Post -Path "/jobs/$(ConvertTo-BasilSegment $Id)/run"
        $deadline = (Get-Date).AddSeconds($TimeoutSeconds)
        while ($Wait -and $run.outcome -eq 'running') {
            if ((Get-Date) -ge $deadline) {
                throw "Job $Id run $($run.id): still running after $TimeoutSeconds s."
            }
            Start-Sleep -Seconds 2
            $run = Invoke-BasilApi -Method Get -Path "/jobs/$(ConvertTo-BasilSegment $Id)/runs/$($run.id)"
        }
        $run | ConvertTo-BasilObject -TypeName 'Basil.JobRun'
    }
}

Export-ModuleMember -Function @(
    'Connect-Basil'
    'Get-BasilPod'
    'Get-BasilRecommendation'
    'New-BasilPlan'
    'Approve-BasilPlan'
    'Start-BasilPlan'
    'Wait-BasilPlan'
    'Stop-BasilPlan'
    'Get-BasilPool'
    'Set-BasilPool'
    'Get-BasilPlacement'
    'Start-BasilJob'
)
